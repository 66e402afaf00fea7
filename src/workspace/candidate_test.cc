// candidate_test.cc — candidate values: names checked at the edge, the same hash from a folder and
// from data, snapshots with our binding files.
#include "workspace/candidate.h"

#include <gtest/gtest.h>

#include "common/test_dir.h"
#include "workspace/layout.h"

namespace cuda_agent {
namespace {

TEST(CandidateTest, FolderAndDataGiveTheSameHash) {
  TestDir dir("candidate");
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "kernels/a.cu", "__global__ void k() {}").ok());
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "model_new.py", "class ModelNew: pass\n").ok());
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "notes.txt", "ignored").ok());
  Result<Candidate> folder = Candidate::FromFolder(dir.path());
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  EXPECT_EQ(folder->files().size(), 2u);
  Result<Candidate> data = Candidate::FromFiles(
      {{"kernels/a.cu", "__global__ void k() {}"}, {"model_new.py", "class ModelNew: pass\n"}});
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(folder->hash(), data->hash());
  Result<Candidate> other = Candidate::FromFiles({{"kernels/a.cu", "changed"}});
  EXPECT_NE(other->hash(), data->hash());
}

TEST(CandidateTest, NamesThatLeaveTheWorkspaceAreRefused) {
  for (const std::string name : {"/etc/passwd", "../x.cu", "kernels/../../x.cu", "kernels/./a.cu",
                                 "", "kernels//a.cu", "kernels\\a.cu"}) {
    Result<Candidate> c = Candidate::FromFiles({{name, "x"}});
    EXPECT_FALSE(c.ok()) << name;
    if (!c.ok()) {
      EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    }
  }
  Result<Candidate> wrong = Candidate::FromFiles({{"utils/compile.sh", "x"}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("model_new.py"), std::string::npos)
      << "the message names the allowed files";
  EXPECT_FALSE(Candidate::FromJson(Json{{"kernels/a.cu", 3}}).ok());
  EXPECT_FALSE(Candidate::FromJson(Json::array()).ok());
}

TEST(CandidateTest, SnapshotTakesBindingFilesFromTheTemplateOnly) {
  TestDir dir("candidate");
  const fs::path templ = dir.path() / "template";
  for (const char* fixed : kInfrastructureFiles) {
    ASSERT_TRUE(WriteFileAtomic(templ / fixed, std::string("ours:") + fixed).ok());
  }
  Result<Candidate> c = Candidate::FromFiles({{"kernels/a.cu", "k"}});
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->WriteSnapshot(dir.path() / "snap", templ).ok());
  EXPECT_EQ(ReadFile(dir.path() / "snap/kernels/a.cu").value(), "k");
  EXPECT_EQ(ReadFile(dir.path() / "snap" / kBindingSource).value(),
            std::string("ours:") + kBindingSource);
}

}  // namespace
}  // namespace cuda_agent
