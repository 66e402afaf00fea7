// single_file_test.cc — which --candidate paths are KernelBench single-file solutions (the
// conversion itself: python/tests/test_single_file.py and tests/judge/test_single_file_judge.py).
#include "workspace/single_file.h"

#include <gtest/gtest.h>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

TEST(SingleFileTest, APyFileOrAFolderOfOnePyWithoutKernels) {
  TestDir dir("single_file");
  const fs::path one = dir.path() / "one";
  ASSERT_TRUE(WriteFileAtomic(one / "solution.py", "import torch\n").ok());
  ASSERT_TRUE(WriteFileAtomic(one / "README.md", "notes\n").ok());
  EXPECT_EQ(SingleFileOf(one / "solution.py"), one / "solution.py");
  EXPECT_EQ(SingleFileOf(one), one / "solution.py");
  EXPECT_EQ(SingleFileOf(one / "README.md"), std::nullopt);
  EXPECT_EQ(SingleFileOf(dir.path() / "missing.py"), std::nullopt);

  const fs::path two = dir.path() / "two";
  ASSERT_TRUE(WriteFileAtomic(two / "a.py", "").ok());
  ASSERT_TRUE(WriteFileAtomic(two / "b.py", "").ok());
  EXPECT_EQ(SingleFileOf(two), std::nullopt);

  const fs::path folder = dir.path() / "candidate";
  ASSERT_TRUE(WriteFileAtomic(folder / "model_new.py", "").ok());
  ASSERT_TRUE(WriteFileAtomic(folder / "kernels/a.cpp", "").ok());
  EXPECT_EQ(SingleFileOf(folder), std::nullopt);
}

}  // namespace
}  // namespace cuda_agent
