// tools_test.cc — the agent's tools: path escapes, protected files, Edit/MultiEdit rules, Read
// offsets, Glob/Grep, output caps, schema checks, Bash in the sandbox and background jobs.
#include "agent/tools.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

class ToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TestDir>("agent-tools");
    workspace_ = dir_->path() / "ws";
    fs::create_directories(workspace_ / "kernels");
    fs::create_directories(workspace_ / "utils");
    Put("model.py", "class Model:\n    pass\n");
    Put("utils/compile.sh", "echo hi\n");
    Put("kernels/a.cu", "int a = 1;\nint b = 2;\nint a2 = 1;\n");
    Put("kernels/b.cpp", "// scale here\nfloat scale = 2;\n");
    context_.workspace = workspace_;
  }
  void Put(const std::string& rel, const std::string& text) {
    fs::create_directories((workspace_ / rel).parent_path());
    std::ofstream(workspace_ / rel) << text;
  }
  std::string Get(const std::string& rel) { return ReadFile(workspace_ / rel).value(); }
  Observation Call(const std::string& name, const Json& args) {
    return tools_.Call(name, args.dump(), context_);
  }

  std::unique_ptr<TestDir> dir_;
  fs::path workspace_;
  ToolContext context_;
  ToolRegistry tools_ = DefaultToolRegistry();
};

TEST_F(ToolsTest, RegistryHasTheTenToolsWithTheirSchemas) {
  std::vector<std::string> names;
  for (const ToolSpec& spec : tools_.Specs()) {
    names.push_back(spec.name);
    EXPECT_EQ(spec.parameters["type"], "object") << spec.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"Bash", "BashOutput", "KillBash", "Read", "Write",
                                             "Edit", "MultiEdit", "Glob", "Grep", "TodoWrite"}));
}

TEST_F(ToolsTest, MalformedCallsAreErrorObservations) {
  Observation unknown = tools_.Call("Delete", "{}", context_);
  EXPECT_TRUE(unknown.is_error);
  EXPECT_NE(unknown.text.find("unknown tool 'Delete'"), std::string::npos);
  Observation bad_json = tools_.Call("Read", "{\"file_path\": ", context_);
  EXPECT_TRUE(bad_json.is_error);
  EXPECT_NE(bad_json.text.find("not valid JSON"), std::string::npos);
  Observation missing = Call("Write", {{"file_path", "kernels/x.cu"}});
  EXPECT_TRUE(missing.is_error);
  EXPECT_NE(missing.text.find("missing required argument 'content'"), std::string::npos);
  Observation wrong_type = Call("Read", {{"file_path", 3}});
  EXPECT_TRUE(wrong_type.is_error);
  EXPECT_NE(wrong_type.text.find("file_path must be of type string"), std::string::npos);
  Observation extra = Call("Read", {{"file_path", "model.py"}, {"colour", "red"}});
  EXPECT_TRUE(extra.is_error);
  EXPECT_NE(extra.text.find("unknown argument 'colour'"), std::string::npos);
  Observation bad_status =
      Call("TodoWrite", {{"todos", {{{"content", "x"}, {"status", "maybe"}}}}});
  EXPECT_TRUE(bad_status.is_error);
  EXPECT_NE(bad_status.text.find("todos[0].status must be one of"), std::string::npos);
}

TEST_F(ToolsTest, PathsOutsideTheWorkspaceAreRefused) {
  std::ofstream(dir_->path() / "secret.txt") << "secret";
  for (const std::string& path :
       {std::string("../secret.txt"), (dir_->path() / "secret.txt").string(),
        std::string("kernels/../../secret.txt"), std::string("/etc/passwd")}) {
    Observation read = Call("Read", {{"file_path", path}});
    EXPECT_TRUE(read.is_error) << path;
    EXPECT_NE(read.text.find("outside the workspace"), std::string::npos) << read.text;
    EXPECT_TRUE(Call("Write", {{"file_path", path}, {"content", "x"}}).is_error) << path;
  }
  EXPECT_EQ(ReadFile(dir_->path() / "secret.txt").value(), "secret");
  // A link inside the workspace that leads out is refused too, for reading and writing.
  fs::create_symlink(dir_->path() / "secret.txt", workspace_ / "kernels" / "link.cu");
  fs::create_directory_symlink(dir_->path(), workspace_ / "kernels" / "up");
  Observation via_link = Call("Read", {{"file_path", "kernels/link.cu"}});
  EXPECT_TRUE(via_link.is_error);
  EXPECT_NE(via_link.text.find("symbolic link"), std::string::npos);
  EXPECT_TRUE(
      Call("Write", {{"file_path", "kernels/up/secret.txt"}, {"content", "owned"}}).is_error);
  EXPECT_TRUE(
      Call("Edit",
           {{"file_path", "kernels/link.cu"}, {"old_string", "secret"}, {"new_string", "x"}})
          .is_error);
  EXPECT_EQ(ReadFile(dir_->path() / "secret.txt").value(), "secret");
  // Absolute paths inside the workspace are fine.
  EXPECT_FALSE(Call("Read", {{"file_path", (workspace_ / "kernels/a.cu").string()}}).is_error);
}

TEST_F(ToolsTest, ProtectedFilesCannotBeChanged) {
  for (const char* path : {"model.py", "utils/compile.sh", "utils/new.py", "SKILL.md",
                           "binding.cpp", "binding_registry.h", "plain_binding.h",
                           ".cuda-agent/workspace.json", "./kernels/../model.py"}) {
    Observation write = Call("Write", {{"file_path", path}, {"content", "hacked"}});
    EXPECT_TRUE(write.is_error) << path;
    EXPECT_NE(write.text.find("protected"), std::string::npos) << write.text;
  }
  Observation edit =
      Call("Edit", {{"file_path", "model.py"}, {"old_string", "pass"}, {"new_string", "x = 1"}});
  EXPECT_TRUE(edit.is_error);
  Observation multi = Call("MultiEdit", {{"file_path", "utils/compile.sh"},
                                         {"edits", {{{"old_string", "hi"}, {"new_string", "x"}}}}});
  EXPECT_TRUE(multi.is_error);
  EXPECT_EQ(Get("model.py"), "class Model:\n    pass\n");
  EXPECT_EQ(Get("utils/compile.sh"), "echo hi\n");
  EXPECT_FALSE(fs::exists(workspace_ / "SKILL.md"));
  EXPECT_TRUE(IsProtectedPath("utils/x/y.py"));
  EXPECT_FALSE(IsProtectedPath("kernels/model.py"));
  EXPECT_FALSE(IsProtectedPath("model_new.py"));
}

TEST_F(ToolsTest, WriteCreatesFoldersAndReportsSizes) {
  Observation o = Call("Write", {{"file_path", "kernels/sub/new.cu"}, {"content", "abc"}});
  EXPECT_FALSE(o.is_error) << o.text;
  EXPECT_EQ(o.text, "Created kernels/sub/new.cu (3 bytes)");
  EXPECT_EQ(Get("kernels/sub/new.cu"), "abc");
  EXPECT_EQ(Call("Write", {{"file_path", "kernels/sub/new.cu"}, {"content", "abcd"}}).text,
            "Overwrote kernels/sub/new.cu (4 bytes)");
  EXPECT_TRUE(Call("Write", {{"file_path", "kernels"}, {"content", "x"}}).is_error);
}

TEST_F(ToolsTest, EditNeedsAUniqueMatchUnlessReplaceAll) {
  Observation ambiguous =
      Call("Edit", {{"file_path", "kernels/a.cu"}, {"old_string", "= 1;"}, {"new_string", "= 3;"}});
  EXPECT_TRUE(ambiguous.is_error);
  EXPECT_NE(ambiguous.text.find("matches 2 times"), std::string::npos) << ambiguous.text;
  EXPECT_EQ(Get("kernels/a.cu"), "int a = 1;\nint b = 2;\nint a2 = 1;\n");
  Observation missing =
      Call("Edit", {{"file_path", "kernels/a.cu"}, {"old_string", "int c"}, {"new_string", "x"}});
  EXPECT_TRUE(missing.is_error);
  EXPECT_NE(missing.text.find("not found"), std::string::npos);
  Observation unique = Call(
      "Edit",
      {{"file_path", "kernels/a.cu"}, {"old_string", "int b = 2;"}, {"new_string", "int b = 5;"}});
  EXPECT_FALSE(unique.is_error) << unique.text;
  Observation all = Call("Edit", {{"file_path", "kernels/a.cu"},
                                  {"old_string", "= 1;"},
                                  {"new_string", "= 3;"},
                                  {"replace_all", true}});
  EXPECT_FALSE(all.is_error) << all.text;
  EXPECT_NE(all.text.find("2 replacements"), std::string::npos);
  EXPECT_EQ(Get("kernels/a.cu"), "int a = 3;\nint b = 5;\nint a2 = 3;\n");
  EXPECT_TRUE(
      Call("Edit", {{"file_path", "kernels/none.cu"}, {"old_string", "a"}, {"new_string", "b"}})
          .is_error);
}

TEST_F(ToolsTest, MultiEditIsAllOrNothing) {
  Json edits = {{{"old_string", "int a = 1;"}, {"new_string", "int a = 7;"}},
                {{"old_string", "does not exist"}, {"new_string", "x"}}};
  Observation failed = Call("MultiEdit", {{"file_path", "kernels/a.cu"}, {"edits", edits}});
  EXPECT_TRUE(failed.is_error);
  EXPECT_NE(failed.text.find("edit 2 of 2"), std::string::npos) << failed.text;
  EXPECT_EQ(Get("kernels/a.cu"), "int a = 1;\nint b = 2;\nint a2 = 1;\n");
  // Later edits see the earlier ones.
  Json chained = {{{"old_string", "int b = 2;"}, {"new_string", "int b = 9;"}},
                  {{"old_string", "b = 9"}, {"new_string", "b = 10"}},
                  {{"old_string", "= 1;"}, {"new_string", "= 0;"}, {"replace_all", true}}};
  Observation ok = Call("MultiEdit", {{"file_path", "kernels/a.cu"}, {"edits", chained}});
  EXPECT_FALSE(ok.is_error) << ok.text;
  EXPECT_EQ(Get("kernels/a.cu"), "int a = 0;\nint b = 10;\nint a2 = 0;\n");
  EXPECT_TRUE(
      Call("MultiEdit", {{"file_path", "kernels/a.cu"}, {"edits", Json::array()}}).is_error);
}

TEST_F(ToolsTest, ReadNumbersLinesAndHonoursOffsetAndLimit) {
  std::string text;
  for (int i = 1; i <= 50; ++i) text += "line " + std::to_string(i) + "\n";
  text += std::string(3000, 'x') + "\n";
  Put("kernels/long.cu", text);
  Observation all = Call("Read", {{"file_path", "kernels/long.cu"}});
  EXPECT_FALSE(all.is_error);
  EXPECT_NE(all.text.find("     1\tline 1\n"), std::string::npos);
  EXPECT_NE(all.text.find("    50\tline 50\n"), std::string::npos);
  EXPECT_NE(all.text.find("[... line cut: 3000 characters]"), std::string::npos);
  Observation part = Call("Read", {{"file_path", "kernels/long.cu"}, {"offset", 10}, {"limit", 3}});
  EXPECT_EQ(part.text.substr(0, part.text.find("[")),
            "    10\tline 10\n    11\tline 11\n    12\tline 12\n");
  EXPECT_NE(part.text.find("lines 10-12 of 51 shown"), std::string::npos) << part.text;
  Observation past = Call("Read", {{"file_path", "kernels/long.cu"}, {"offset", 99}});
  EXPECT_TRUE(past.is_error);
  EXPECT_NE(past.text.find("past the end"), std::string::npos);
  EXPECT_TRUE(Call("Read", {{"file_path", "kernels/nothing.cu"}}).is_error);
  EXPECT_TRUE(Call("Read", {{"file_path", "kernels"}}).is_error);
}

TEST_F(ToolsTest, GlobAndGrep) {
  Observation glob = Call("Glob", {{"pattern", "kernels/*.cu"}});
  EXPECT_EQ(glob.text, "kernels/a.cu\n");
  Observation deep = Call("Glob", {{"pattern", "**/*.{cu,cpp}"}});
  EXPECT_EQ(deep.text, "kernels/a.cu\nkernels/b.cpp\n");
  Observation under = Call("Glob", {{"pattern", "*.cpp"}, {"path", "kernels"}});
  EXPECT_EQ(under.text, "kernels/b.cpp\n");
  EXPECT_NE(Call("Glob", {{"pattern", "*.rs"}}).text.find("No files match"), std::string::npos);
  EXPECT_TRUE(Call("Glob", {{"pattern", "*"}, {"path", ".."}}).is_error);

  Observation grep = Call("Grep", {{"pattern", "scale"}});
  EXPECT_EQ(grep.text, "kernels/b.cpp:1: // scale here\nkernels/b.cpp:2: float scale = 2;\n");
  Observation regex = Call("Grep", {{"pattern", "int a2? = [0-9]"}, {"glob", "*.cu"}});
  EXPECT_EQ(regex.text, "kernels/a.cu:1: int a = 1;\nkernels/a.cu:3: int a2 = 1;\n");
  Observation filtered = Call("Grep", {{"pattern", "scale"}, {"glob", "*.cu"}});
  EXPECT_NE(filtered.text.find("No matches"), std::string::npos);
  Observation one_file = Call("Grep", {{"pattern", "b ="}, {"path", "kernels/a.cu"}});
  EXPECT_EQ(one_file.text, "kernels/a.cu:2: int b = 2;\n");
  EXPECT_TRUE(Call("Grep", {{"pattern", "("}}).is_error);
}

TEST_F(ToolsTest, LongOutputsKeepHeadAndTail) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "row " + std::to_string(i) + "\n";
  std::string capped = CapOutput(text, 1000);
  EXPECT_LT(capped.size(), 1200u);
  EXPECT_EQ(capped.rfind("row 0\n", 0), 0u);
  EXPECT_NE(capped.find("row 4999\n"), std::string::npos);
  EXPECT_NE(capped.find("output truncated"), std::string::npos);
  EXPECT_EQ(CapOutput("short", 1000), "short");
  // Through a tool: the registry applies the context's cap.
  Put("kernels/big.cu", text);
  context_.output_cap_chars = 2000;
  Observation read = Call("Read", {{"file_path", "kernels/big.cu"}, {"limit", 6000}});
  EXPECT_LT(read.text.size(), 2300u);
  EXPECT_NE(read.text.find("output truncated"), std::string::npos);
  EXPECT_NE(read.text.find("\trow 4999"), std::string::npos);
}

TEST_F(ToolsTest, InvalidUtf8IsReplaced) {
  EXPECT_EQ(ValidUtf8("a\xff"
                      "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(ValidUtf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  Json j = ValidUtf8("x\xC3");
  EXPECT_NO_THROW(j.dump());
}

TEST_F(ToolsTest, TodoWriteKeepsTheList) {
  Observation o =
      Call("TodoWrite", {{"todos",
                          {{{"content", "write kernel"}, {"status", "completed"}},
                           {{"content", "profile"}, {"status", "pending"}, {"id", "2"}}}}});
  EXPECT_FALSE(o.is_error);
  EXPECT_NE(o.text.find("[x] write kernel"), std::string::npos);
  EXPECT_NE(o.text.find("[ ] profile"), std::string::npos);
  EXPECT_EQ(context_.todos.size(), 2u);
}

// Bash runs in the real sandbox of this machine (bubblewrap, our jail, or unisolated where neither
// works): the workspace is writable and the current directory, the rest is read-only.
TEST_F(ToolsTest, BashRunsInTheWorkspaceAndReportsFailures) {
  Observation ok =
      Call("Bash", {{"command", "pwd; echo out; echo err >&2; echo data > kernels/made.txt"}});
  EXPECT_FALSE(ok.is_error) << ok.text;
  EXPECT_NE(ok.text.find(fs::canonical(workspace_).string()), std::string::npos) << ok.text;
  EXPECT_NE(ok.text.find("out\nerr\n"), std::string::npos) << ok.text;
  EXPECT_EQ(Get("kernels/made.txt"), "data\n");
  Observation failed = Call("Bash", {{"command", "echo before; exit 3"}});
  EXPECT_TRUE(failed.is_error);
  EXPECT_NE(failed.text.find("before\n[exit status 3]"), std::string::npos) << failed.text;
  if (Sandbox::Default().Level() != Isolation::kNone) {
    // Outside the workspace: the root is read-only and /tmp is private to the sandbox.
    Observation root = Call("Bash", {{"command", "touch /usr/cuda-agent-escaped"}});
    EXPECT_TRUE(root.is_error) << root.text;
    EXPECT_FALSE(fs::exists("/usr/cuda-agent-escaped"));
    Call("Bash", {{"command", "touch " + (dir_->path() / "escaped").string()}});
    EXPECT_FALSE(fs::exists(dir_->path() / "escaped"));
  }
}

TEST_F(ToolsTest, BashCannotChangeProtectedFiles) {
  context_.sandbox_policy.protected_files = {workspace_ / "model.py",
                                             workspace_ / "utils" / "compile.sh"};
  Observation o =
      Call("Bash", {{"command", "echo hacked > model.py; rm -f utils/compile.sh; echo tried"}});
  if (Sandbox::Default().Level() != Isolation::kNone) {
    EXPECT_NE(o.text.find("model.py: Read-only file system"), std::string::npos) << o.text;
    EXPECT_EQ(Get("model.py"), "class Model:\n    pass\n");
    EXPECT_EQ(Get("utils/compile.sh"), "echo hi\n");
  } else {
    EXPECT_TRUE(o.is_error) << o.text;
    EXPECT_NE(
        o.text.find(
            "changed protected workspace files: model.py utils/compile.sh; they were restored"),
        std::string::npos)
        << o.text;
  }
  // Whatever the sandbox, the files are as they were.
  EXPECT_EQ(Get("model.py"), "class Model:\n    pass\n");
  EXPECT_EQ(Get("utils/compile.sh"), "echo hi\n");
}

TEST_F(ToolsTest, BashTimesOut) {
  auto start = std::chrono::steady_clock::now();
  Observation o = Call("Bash", {{"command", "echo started; sleep 1000"}, {"timeout", 1}});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(o.is_error);
  EXPECT_NE(o.text.find("timed out after 1 s"), std::string::npos) << o.text;
  EXPECT_LT(seconds, 30);
  Observation empty = Call("Bash", {{"command", "  "}});
  EXPECT_TRUE(empty.is_error);
}

TEST_F(ToolsTest, BackgroundJobsOutputAndKill) {
  BackgroundJobs jobs(dir_->path() / "jobs");
  context_.jobs = &jobs;
  Observation started = Call("Bash", {{"command", "echo first; sleep 0.5; echo second; sleep 1000"},
                                      {"run_in_background", true}});
  ASSERT_FALSE(started.is_error) << started.text;
  EXPECT_NE(started.text.find("bash_1"), std::string::npos);
  std::string seen;
  for (int i = 0; i < 100 && seen.find("second") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    Observation out = Call("BashOutput", {{"id", "bash_1"}});
    ASSERT_FALSE(out.is_error) << out.text;
    EXPECT_NE(out.text.find("bash_1: running"), std::string::npos) << out.text;
    seen += out.text;
  }
  EXPECT_NE(seen.find("first\n"), std::string::npos) << seen;
  EXPECT_NE(seen.find("second\n"), std::string::npos) << seen;
  // Only new output the next time.
  Observation again = Call("BashOutput", {{"id", "bash_1"}});
  EXPECT_EQ(again.text.find("first"), std::string::npos) << again.text;
  EXPECT_NE(again.text.find("(no new output)"), std::string::npos);
  EXPECT_EQ(jobs.Running(), 1u);
  Observation killed = Call("KillBash", {{"id", "bash_1"}});
  EXPECT_FALSE(killed.is_error);
  EXPECT_NE(killed.text.find("killed"), std::string::npos) << killed.text;
  EXPECT_EQ(jobs.Running(), 0u);
  EXPECT_NE(Call("BashOutput", {{"id", "bash_1"}}).text.find("bash_1: killed"), std::string::npos);
  EXPECT_TRUE(Call("BashOutput", {{"id", "bash_9"}}).is_error);
  EXPECT_TRUE(Call("KillBash", {{"id", "bash_9"}}).is_error);

  Observation quick = Call("Bash", {{"command", "echo done; exit 4"}, {"run_in_background", true}});
  ASSERT_FALSE(quick.is_error);
  std::string state;
  for (int i = 0; i < 100 && state.find("exited") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    state += Call("BashOutput", {{"id", "bash_2"}}).text;
  }
  EXPECT_NE(state.find("exited with status 4"), std::string::npos) << state;
  EXPECT_NE(state.find("done\n"), std::string::npos) << state;
}

TEST_F(ToolsTest, KillAllStopsEveryJob) {
  auto jobs = std::make_unique<BackgroundJobs>(dir_->path() / "jobs");
  context_.jobs = jobs.get();
  for (int i = 0; i < 3; ++i)
    ASSERT_FALSE(Call("Bash", {{"command", "sleep 1000"}, {"run_in_background", true}}).is_error);
  EXPECT_EQ(jobs->Running(), 3u);
  auto start = std::chrono::steady_clock::now();
  jobs->KillAll();
  EXPECT_EQ(jobs->Running(), 0u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20);
  context_.jobs = nullptr;
  EXPECT_TRUE(Call("Bash", {{"command", "sleep 1"}, {"run_in_background", true}}).is_error);
}

}  // namespace
}  // namespace cuda_agent
