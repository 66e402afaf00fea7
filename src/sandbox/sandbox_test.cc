// sandbox_test.cc — the bubblewrap command line a policy produces, and the unisolated fallback.
// (The abuse probes that run real sandboxes are tests/sandbox/test_probes.py.)
#include "sandbox/sandbox.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

// Index of the first occurrence of the pair (flag, value) in argv, or -1.
int Find(const std::vector<std::string>& argv, const std::string& flag, const std::string& value) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag && argv[i + 1] == value) return static_cast<int>(i);
  }
  return -1;
}

TEST(Sandbox, BubblewrapArgsFollowThePolicy) {
  fs::path dir = MakeTempDir(fs::temp_directory_path(), "sb-test").value();
  fs::create_directories(dir / "out");
  ASSERT_TRUE(WriteFileAtomic(dir / "out" / "model.py", "x").ok());
  Sandbox sb = Sandbox::WithBubblewrap("/usr/bin/bwrap");
  SandboxPolicy p;
  p.writable = {dir / "out"};
  p.read_only = {dir / "out" / "model.py", dir / "missing"};
  p.hidden = {dir};
  RunOptions inner;
  inner.argv = {"/bin/echo", "hi"};
  inner.cwd = (dir / "out").string();
  std::vector<std::string> a = sb.BubblewrapArgs(p, inner);
  EXPECT_EQ(a.front(), "/usr/bin/bwrap");
  EXPECT_NE(std::find(a.begin(), a.end(), "--unshare-net"), a.end()) << "no network by default";
  EXPECT_NE(Find(a, "--cap-drop", "ALL"), -1);
  EXPECT_NE(Find(a, "--uid", "65534"), -1);
  int hide = Find(a, "--tmpfs", dir.string());
  int rw = Find(a, "--bind", (dir / "out").string());
  int ro = Find(a, "--ro-bind", (dir / "out" / "model.py").string());
  ASSERT_NE(hide, -1);
  ASSERT_NE(rw, -1);
  ASSERT_NE(ro, -1);
  EXPECT_LT(hide, rw) << "hide first, then bind back";
  EXPECT_LT(rw, ro) << "a protected file inside a writable folder stays read-only";
  EXPECT_EQ(Find(a, "--ro-bind", (dir / "missing").string()), -1)
      << "missing read-only paths are skipped";
  EXPECT_NE(Find(a, "--chdir", (dir / "out").string()), -1);
  EXPECT_EQ(std::vector<std::string>(a.end() - 3, a.end()),
            (std::vector<std::string>{"--", "/bin/echo", "hi"}));
  p.network = true;
  a = sb.BubblewrapArgs(p, inner);
  EXPECT_EQ(std::find(a.begin(), a.end(), "--unshare-net"), a.end());
  fs::remove_all(dir);
}

TEST(Sandbox, MissingWritableFolderIsAnError) {
  Sandbox sb = Sandbox::WithBubblewrap("/usr/bin/bwrap");
  SandboxPolicy p;
  p.writable = {"/nonexistent/cuda-agent/out"};
  RunOptions inner;
  inner.argv = {"/bin/true"};
  Result<SandboxRun> r = sb.Run(p, inner);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not exist"), std::string::npos);
}

TEST(Jail, SpecSurvivesItsJsonForm) {
  JailSpec spec;
  spec.writable = {"/w"};
  spec.read_only = {"/r1", "/r2"};
  spec.hidden = {"/h"};
  spec.protected_files = {"/p"};
  spec.cgroup_procs = {"/sys/fs/cgroup/x/cgroup.procs"};
  spec.gpu = true;
  spec.drop_host_uid = true;
  spec.tmp_bytes = 123;
  spec.cwd = "/w";
  spec.limits.file_size_bytes = 77;
  Result<JailSpec> back = JailSpecFromJson(JailSpecToJson(spec));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->read_only, spec.read_only);
  EXPECT_EQ(back->protected_files, spec.protected_files);
  EXPECT_EQ(back->cgroup_procs, spec.cgroup_procs);
  EXPECT_TRUE(back->gpu && back->drop_host_uid && !back->network);
  EXPECT_EQ(back->tmp_bytes, 123u);
  EXPECT_EQ(back->limits.file_size_bytes, 77u);
  EXPECT_EQ(back->cwd, "/w");
}

TEST(Jail, RelativePathsAreRefused) {
  Result<JailSpec> spec = JailSpecFromJson(Json{{"writable", {"relative/out"}}});
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("relative/out"), std::string::npos);
  EXPECT_FALSE(JailSpecFromJson(Json::array()).ok());
}

TEST(Sandbox, PrepareJailRefusesAMissingWritableFolder) {
  Sandbox sb = Sandbox::WithJail("/proc/self/exe");
  SandboxPolicy p;
  p.writable = {"/nonexistent/cuda-agent/out"};
  Result<JobContainment> c = sb.PrepareJail(p, {}, "/");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("does not exist"), std::string::npos);
}

TEST(Sandbox, UnisolatedSaysSoAndStillEnforcesTheWatchdog) {
  Sandbox sb = Sandbox::Unisolated("testing");
  EXPECT_EQ(sb.Level(), Isolation::kNone);
  EXPECT_NE(sb.Describe().find("testing"), std::string::npos);
  RunOptions inner;
  inner.argv = {"/bin/sh", "-c", "sleep 10"};
  inner.timeout_seconds = 0.3;
  Result<SandboxRun> r = sb.Run(SandboxPolicy{}, inner);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->process.timed_out);
  EXPECT_EQ(r->isolation, Isolation::kNone);
}

TEST(Sandbox, AJobThatKeepsTheHostUidWritesWhereOneThatDroppedItWrote) {
  const Sandbox& sb = Sandbox::Default();
  if (geteuid() != 0 || sb.Level() == Isolation::kNone) {
    GTEST_SKIP() << "the host uid is dropped only by root, in a sandbox";
  }
  TestDir dir("sb-owner");
  fs::create_directories(dir.path() / "out");
  SandboxPolicy p;
  p.writable = {dir.path() / "out"};
  // 65534 can read every path the first command names, so it runs as 65534; the second names a
  // file that does not exist yet (a compiler's output), so it keeps the host uid.
  RunOptions dropped;
  dropped.argv = {"/bin/sh", "-c", "echo a > a"};
  dropped.cwd = (dir.path() / "out").string();
  Result<SandboxRun> first = sb.Run(p, dropped);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(first->host_uid_dropped);
  RunOptions kept = dropped;
  fs::path output = dir.path() / "out" / "b";
  kept.argv = {"/bin/sh", "-c", "echo b > \"$0\" && echo c >> a", output.string()};
  Result<SandboxRun> second = sb.Run(p, kept);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_FALSE(second->host_uid_dropped);
  EXPECT_TRUE(second->process.Succeeded()) << second->process.err;
  EXPECT_TRUE(fs::exists(output));
  p.keep_host_uid = true;
  Result<SandboxRun> third = sb.Run(p, dropped);
  ASSERT_TRUE(third.ok()) << third.status().message();
  EXPECT_FALSE(third->host_uid_dropped) << "the policy keeps it";
  EXPECT_TRUE(third->process.Succeeded()) << third->process.err;
}

}  // namespace
}  // namespace cuda_agent
