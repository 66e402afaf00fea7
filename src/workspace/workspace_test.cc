// workspace_test.cc — workspace init from the real template, protection, snapshots, hashes.
#include "workspace/workspace.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "workspace/candidate.h"

namespace cuda_agent {
namespace {

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = MakeTempDir(fs::temp_directory_path(), "ws-test").value();
    env_.home = CUDA_AGENT_SOURCE_DIR;
    task_.code =
        "class Model: pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n";
    task_.id = TaskIdForCode(task_.code);
    task_.name = "t";
  }
  void TearDown() override {
    // Protected files are read-only; make them writable so they can be removed.
    for (auto& e : fs::recursive_directory_iterator(root_)) {
      chmod(e.path().c_str(), 0755);
    }
    fs::remove_all(root_);
  }
  WorkspaceSpec Spec(const fs::path& dir) { return {task_, dir, Device::kCpu, env_, "/bin/true"}; }

  fs::path root_;
  HarnessEnv env_;
  Task task_;
};

TEST_F(WorkspaceTest, InitWritesTemplateTaskAndMetadata) {
  fs::path ws = root_ / "ws";
  ASSERT_TRUE(InitWorkspace(Spec(ws)).ok());
  for (const char* f : {"SKILL.md", "binding.cpp", "binding_registry.h", "plain_binding.h",
                        "model.py", "utils/compile.sh", "utils/verification.py",
                        "utils/profiling.py", "utils/ncu.py", ".cuda-agent/workspace.json"}) {
    EXPECT_TRUE(fs::exists(ws / f)) << f;
  }
  EXPECT_TRUE(fs::is_directory(ws / "kernels"));
  EXPECT_EQ(ReadFile(ws / "model.py").value(), task_.code);
  std::string skill = ReadFile(ws / "SKILL.md").value();
  EXPECT_EQ(skill.find("{{DEVICE}}"), std::string::npos) << "the device placeholder is filled in";
  struct stat st;
  ASSERT_EQ(stat((ws / "model.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0222, 0u) << "protected files are read-only";
  EXPECT_TRUE(VerifyProtectedFiles(ws).ok());
}

TEST_F(WorkspaceTest, InitRefusesANonEmptyFolder) {
  fs::path ws = root_ / "ws";
  ASSERT_TRUE(WriteFileAtomic(ws / "x", "y").ok());
  EXPECT_EQ(InitWorkspace(Spec(ws)).code(), StatusCode::kInvalidArgument);
}

TEST_F(WorkspaceTest, TamperingIsDetected) {
  fs::path ws = root_ / "ws";
  ASSERT_TRUE(InitWorkspace(Spec(ws)).ok());
  chmod((ws / "utils" / "verification.py").c_str(), 0644);
  ASSERT_TRUE(
      WriteFileAtomic(ws / "utils" / "verification.py", "print('[PASS] verify success')\n").ok());
  Status s = VerifyProtectedFiles(ws);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("utils/verification.py"), std::string::npos);
}

TEST_F(WorkspaceTest, SnapshotTakesOnlyCandidateFilesAndOurBindings) {
  fs::path cand = root_ / "cand";
  ASSERT_TRUE(WriteFileAtomic(cand / "model_new.py", "class ModelNew: pass\n").ok());
  ASSERT_TRUE(WriteFileAtomic(cand / "kernels" / "k.cu", "__global__ void k() {}\n").ok());
  ASSERT_TRUE(WriteFileAtomic(cand / "kernels" / "k.cuh", "#pragma once\n").ok());
  ASSERT_TRUE(
      WriteFileAtomic(cand / "binding.cpp", "// a candidate's own binding.cpp is ignored\n").ok());
  ASSERT_TRUE(WriteFileAtomic(cand / "plain_binding.h", "// and so is its plain_binding.h\n").ok());
  ASSERT_TRUE(WriteFileAtomic(cand / "notes.txt", "x").ok());
  ASSERT_TRUE(WriteFileAtomic(cand / "cuda_extension.so", "stale").ok());
  fs::path snap = root_ / "snap";
  Result<Candidate> candidate = Candidate::FromFolder(cand);
  ASSERT_TRUE(candidate.ok()) << candidate.status().message();
  ASSERT_TRUE(candidate->WriteSnapshot(snap, env_.TemplateDir()).ok());
  EXPECT_TRUE(fs::exists(snap / "kernels" / "k.cu"));
  EXPECT_TRUE(fs::exists(snap / "kernels" / "k.cuh"));
  EXPECT_TRUE(fs::exists(snap / "model_new.py"));
  EXPECT_FALSE(fs::exists(snap / "notes.txt"));
  EXPECT_FALSE(fs::exists(snap / "cuda_extension.so"));
  EXPECT_EQ(ReadFile(snap / "binding.cpp").value(),
            ReadFile(env_.TemplateDir() / "binding.cpp").value());
  EXPECT_EQ(ReadFile(snap / "plain_binding.h").value(),
            ReadFile(env_.TemplateDir() / "plain_binding.h").value());
}

TEST_F(WorkspaceTest, CandidateHashFollowsContent) {
  fs::path cand = root_ / "cand";
  ASSERT_TRUE(WriteFileAtomic(cand / "model_new.py", "a").ok());
  auto hash = [&] { return Candidate::FromFolder(cand).value().hash(); };
  std::string h1 = hash();
  ASSERT_TRUE(WriteFileAtomic(cand / "notes.txt", "ignored").ok());
  EXPECT_EQ(hash(), h1);
  ASSERT_TRUE(WriteFileAtomic(cand / "model_new.py", "b").ok());
  EXPECT_NE(hash(), h1);
}

}  // namespace
}  // namespace cuda_agent
