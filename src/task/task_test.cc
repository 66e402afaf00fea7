// task_test.cc — the three task sources, selection, ids and the shape check.
#include "task/task.h"

#include <gtest/gtest.h>

#include "common/json.h"

namespace cuda_agent {
namespace {

constexpr const char* kGood = R"(import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2
def get_inputs():
    return [torch.randn(4)]
def get_init_inputs():
    return []
)";

class TaskTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(fs::temp_directory_path(), "task-test").value(); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(TaskTest, SingleFileHasContentId) {
  ASSERT_TRUE(WriteFileAtomic(dir_ / "double.py", kGood).ok());
  Result<Task> t = LoadTask((dir_ / "double.py").string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->name, "double");
  EXPECT_EQ(t->id, TaskIdForCode(kGood));
  EXPECT_EQ(t->id.size(), 16u);
  EXPECT_TRUE(CheckTaskShape(t.value()).ok());
}

TEST_F(TaskTest, ShapeCheckNamesWhatIsMissing) {
  Task t;
  t.name = "x";
  t.code = "class Model: pass\ndef get_init_inputs(): return []\n";
  Status s = CheckTaskShape(t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("get_inputs()"), std::string::npos);
  t.code = "def get_inputs(): pass\ndef get_init_inputs(): pass\n";
  EXPECT_NE(CheckTaskShape(t).message().find("class Model"), std::string::npos);
  t.code = "class Model: pass\ndef get_inputs(): pass\n";
  EXPECT_NE(CheckTaskShape(t).message().find("get_init_inputs"), std::string::npos);
  t.code = "class ModelNew: pass\ndef get_inputs(): pass\ndef get_init_inputs(): pass\n";
  EXPECT_FALSE(CheckTaskShape(t).ok()) << "ModelNew is not Model";
}

TEST_F(TaskTest, JsonlDatasetWithPublishedColumns) {
  std::string row1 =
      Json{{"code", kGood}, {"ops", "['torch.relu', 'torch.mul']"}, {"data_source", "torch#2"}}
          .dump();
  std::string row2 = Json{{"task_id", "t2"}, {"code", "x"}, {"ops", Json::array({"a"})}}.dump();
  ASSERT_TRUE(WriteFileAtomic(dir_ / "d.jsonl", row1 + "\n\n" + row2 + "\n").ok());
  Result<std::vector<Task>> all = LoadSuite(dir_ / "d.jsonl");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(all->at(0).ops, (std::vector<std::string>{"torch.relu", "torch.mul"}));
  EXPECT_EQ(all->at(0).data_source, "torch#2");
  EXPECT_EQ(all->at(0).id, TaskIdForCode(kGood));
  EXPECT_EQ(all->at(1).id, "t2");
  EXPECT_EQ(LoadTask((dir_ / "d.jsonl").string() + "#t2")->code, "x");
  EXPECT_EQ(LoadTask((dir_ / "d.jsonl").string() + "#0")->code, kGood);
  EXPECT_FALSE(LoadTask((dir_ / "d.jsonl").string()).ok()) << "two rows need a selector";
}

TEST_F(TaskTest, JsonlErrorsNameTheLine) {
  ASSERT_TRUE(WriteFileAtomic(dir_ / "bad.jsonl", "{\"code\": \"x\"}\n{not json\n").ok());
  Result<std::vector<Task>> all = LoadSuite(dir_ / "bad.jsonl");
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.status().message().find("bad.jsonl:2"), std::string::npos);
  ASSERT_TRUE(WriteFileAtomic(dir_ / "nocode.jsonl", "{\"ops\": []}\n").ok());
  EXPECT_NE(LoadSuite(dir_ / "nocode.jsonl").status().message().find("\"code\""),
            std::string::npos);
}

TEST_F(TaskTest, KernelBenchDirectory) {
  fs::create_directories(dir_ / "level1");
  fs::create_directories(dir_ / "level2");
  ASSERT_TRUE(WriteFileAtomic(dir_ / "level1" / "10_B.py", kGood).ok());
  ASSERT_TRUE(WriteFileAtomic(dir_ / "level1" / "2_A.py", kGood).ok());
  ASSERT_TRUE(WriteFileAtomic(dir_ / "level2" / "1_C.py", kGood).ok());
  Result<std::vector<Task>> all = LoadSuite(dir_);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ(all->at(0).name, "level1/2_A");
  EXPECT_EQ(all->at(1).name, "level1/10_B");
  EXPECT_EQ(all->at(2).level, 2);
  EXPECT_EQ(LoadTask(dir_.string() + "#level2/1_C")->name, "level2/1_C");
  EXPECT_EQ(LoadTask(dir_.string() + "#10_B")->name, "level1/10_B");
  EXPECT_EQ(LoadTask(dir_.string() + "#nope").status().code(), StatusCode::kNotFound);
}

TEST_F(TaskTest, MissingPath) {
  EXPECT_EQ(LoadTask((dir_ / "none.py").string()).status().code(), StatusCode::kNotFound);
}

TEST(SharedKernelBench, AllTasksLoadAndHaveTheRequiredDefinitions) {
  fs::path suite = fs::path(CUDA_AGENT_SOURCE_DIR) / ".." / "shared" / "kernelbench";
  if (!fs::exists(suite)) GTEST_SKIP() << "../shared/kernelbench not present";
  Result<std::vector<Task>> all = LoadSuite(suite);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->size(), 250u);
  int levels[4] = {0, 0, 0, 0};
  for (const Task& t : all.value()) {
    EXPECT_TRUE(CheckTaskShape(t).ok()) << t.name;
    if (t.level >= 1 && t.level <= 3) ++levels[t.level];
  }
  EXPECT_EQ(levels[1], 100);
  EXPECT_EQ(levels[2], 100);
  EXPECT_EQ(levels[3], 50);
}

}  // namespace
}  // namespace cuda_agent
