// fs_test.cc — a file's stamp: what cache keys use to notice a replaced file.
#include "common/fs.h"

#include <gtest/gtest.h>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

TEST(FileStamp, ChangesWhenTheFileIsReplacedAndFollowsLinks) {
  TestDir dir("file-stamp");
  const fs::path file = dir.path() / "tool";
  ASSERT_TRUE(WriteFileAtomic(file, "one").ok());
  const std::string first = FileStamp(file);
  EXPECT_EQ(first.rfind("3:", 0), 0u) << first;  // the size comes first
  fs::create_symlink(file, dir.path() / "link");
  EXPECT_EQ(FileStamp(dir.path() / "link"), first);
  ASSERT_TRUE(WriteFileAtomic(file, "three").ok());
  EXPECT_NE(FileStamp(file), first);
  EXPECT_EQ(FileStamp(dir.path() / "missing"), "");
}

}  // namespace
}  // namespace cuda_agent
