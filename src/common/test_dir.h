// test_dir.h — for the GoogleTest units only: a fresh, empty temporary folder named after the
// running test, removed again when the object goes away.
//
//   TestDir dir("results-store");
//   Result<ResultsStore> store = ResultsStore::Open(dir.path() / "s.sqlite");
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "common/fs.h"

namespace cuda_agent {

class TestDir {
 public:
  explicit TestDir(const std::string& prefix)
      : path_(fs::temp_directory_path() /
              (prefix + "-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TestDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace cuda_agent
