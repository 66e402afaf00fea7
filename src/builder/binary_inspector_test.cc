// binary_inspector_test.cc — parsing cuobjdump output, normalising kernel names, tensor-core
// opcodes.
#include "builder/binary_inspector.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

// The shape of `cuobjdump -sass` output (CUDA 12/13): one section per architecture, one
// "Function :" header per kernel, one instruction per line with its address in a comment.
constexpr const char* kSass = R"SASS(
Fatbin elf code:
================
arch = sm_90a
code version = [1,8]
host = linux
compile_size = 64bit

	code for sm_90a
		Function : _Z5tf32kPKfS0_Pf
	.headerflags	@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                                  /* 0x00000a00ff017b82 */
                                                                                           /* 0x000fe40000000800 */
        /*0010*/                   HMMA.1684.F32.TF32 R4, R8, R12, RZ ;                    /* 0x0000000c0804723c */
        /*0020*/               @!P0 BRA 0x60 ;                                             /* 0x0000000000008947 */
        /*0030*/                   EXIT ;                                                  /* 0x000000000000794d */
		..........

		Function : _Z6relu_kIfEvPKT_PS0_l
	.headerflags	@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                                  /* 0x00000a00ff017b82 */
        /*0010*/                   FFMA R3, R2, R5, R3 ;                                   /* 0x0000000502037223 */
        /*0020*/                   DMMA.884 R4, R8, R12, R4 ;                              /* 0x0000000c0804723f */
        /*0030*/                   EXIT ;                                                  /* 0x000000000000794d */
		..........



Fatbin ptx code:
================
arch = sm_90a
)SASS";

TEST(BinaryInspectorTest, ParsesKernelsAndTheirOpcodes) {
  std::vector<DeviceKernel> k = ParseCuobjdumpSass(kSass);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].mangled, "_Z5tf32kPKfS0_Pf");
  EXPECT_EQ(k[0].name, "tf32k(float const*, float const*, float*)");
  EXPECT_EQ(k[0].opcodes, (std::set<std::string>{"LDC", "HMMA", "BRA", "EXIT"}));
  EXPECT_EQ(k[1].name, "void relu_k<float>(float const*, float*, long)");
  EXPECT_TRUE(k[1].opcodes.count("FFMA"));
}

TEST(BinaryInspectorTest, InspectionSurvivesItsJsonForm) {
  BinaryInspection in;
  in.source = "sass";
  in.note = "n";
  in.kernels.push_back({"_Z1kv", "k()", {"HMMA", "FFMA"}});
  Result<BinaryInspection> back = InspectionFromJson(InspectionToJson(in));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->source, "sass");
  ASSERT_EQ(back->kernels.size(), 1u);
  EXPECT_EQ(back->kernels[0].opcodes, (std::set<std::string>{"FFMA", "HMMA"}));
  EXPECT_EQ(back->kernels[0].mangled, "_Z1kv");
  EXPECT_FALSE(InspectionFromJson(Json::object()).ok());
}

TEST(BinaryInspectorTest, TensorCoreOpcodesAreReducedPrecisionOnly) {
  std::vector<DeviceKernel> k = ParseCuobjdumpSass(kSass);
  EXPECT_EQ(TensorCoreOpcodes(k[0]), std::vector<std::string>{"HMMA"});
  EXPECT_TRUE(TensorCoreOpcodes(k[1]).empty()) << "DMMA is fp64, FFMA is fp32";
  DeviceKernel hopper{"x", "x", {"HGMMA", "IMMA", "QGMMA", "FADD"}};
  EXPECT_EQ(TensorCoreOpcodes(hopper), (std::vector<std::string>{"HGMMA", "IMMA", "QGMMA"}));
}

TEST(BinaryInspectorTest, SameFunctionForTwoArchitecturesIsOneKernel) {
  std::string twice = std::string(kSass) +
                      "\n\tcode for sm_80\n\t\tFunction : _Z5tf32kPKfS0_Pf\n"
                      "        /*0000*/                   IMMA.8816.S8.S8 R4, R8, R12, RZ ;\n";
  std::vector<DeviceKernel> k = ParseCuobjdumpSass(twice);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_TRUE(k[0].opcodes.count("IMMA"));
}

TEST(BinaryInspectorTest, KernelKeyMatchesProfilerAndDemanglerSpellings) {
  EXPECT_EQ(KernelKey("void relu_k<float>(float const*, float*, long)"), "relu_k<float>");
  EXPECT_EQ(KernelKey("relu_k<float >(float const*, float*, long)"), "relu_k<float>");
  EXPECT_EQ(KernelKey("tf32k(float const*, float const*, float*)"), "tf32k");
  EXPECT_EQ(KernelKey("ns::inner(float*)"), "ns::inner");
  EXPECT_EQ(KernelKey("void (anonymous namespace)::k<(int)4>(float*)"), "(anonymous)::k<(int)4>");
  EXPECT_EQ(KernelKey("(anonymous namespace)::k(float*)"), "(anonymous)::k");
}

TEST(BinaryInspectorTest, DemangleLeavesPlainNamesAlone) {
  EXPECT_EQ(Demangle("relu_kernel"), "relu_kernel");
  EXPECT_EQ(Demangle("_ZN2ns5innerEPf"), "ns::inner(float*)");
}

}  // namespace
}  // namespace cuda_agent
