// precompiled_header_test.cc — which files get which precompiled header, and what is in it.
#include "builder/precompiled_header.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

TEST(PrecompiledHeader, VariantFollowsTheIncludes) {
  EXPECT_EQ(PchVariantFor("#include <cuda_runtime.h>\nint f();"), PchVariant::kNone);
  EXPECT_EQ(PchVariantFor("#include <torch/types.h>\n#include <c10/cuda/CUDAStream.h>"),
            PchVariant::kCore);
  EXPECT_EQ(PchVariantFor("#include <pybind11/pybind11.h>"), PchVariant::kCore);
  EXPECT_EQ(PchVariantFor("#include <torch/extension.h>"), PchVariant::kFull);
}

TEST(PrecompiledHeader, CoreHeaderLeavesOutTheFullApi) {
  std::string core = PchHeaderText(Device::kCuda, PchVariant::kCore);
  std::string full = PchHeaderText(Device::kCuda, PchVariant::kFull);
  EXPECT_EQ(core.find("torch/extension.h"), std::string::npos);
  EXPECT_NE(full.find("torch/extension.h"), std::string::npos);
  EXPECT_NE(core.find("c10/cuda/CUDAStream.h"), std::string::npos);
  EXPECT_EQ(PchHeaderText(Device::kCpu, PchVariant::kCore).find("cuda_runtime"), std::string::npos);
}

TEST(PrecompiledHeader, NothingWithoutACacheOrForPlainFiles) {
  Toolchain tc;
  EXPECT_FALSE(PrecompiledHeader("", {"g++"}, tc, PchVariant::kCore).has_value());
  EXPECT_FALSE(PrecompiledHeader("/tmp", {"g++"}, tc, PchVariant::kNone).has_value());
}

}  // namespace
}  // namespace cuda_agent
