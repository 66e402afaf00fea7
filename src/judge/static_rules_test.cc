// static_rules_test.cc — every rule on a snippet that must fire and one that must not, the rule
// table against docs/static-rules.md and docs/hacks.md. Whole candidates (folders, values, the
// bundled examples, the hack corpus) are scanned in static/candidate_scan_test.cc.
#include "judge/static_rules.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <sstream>

#include "common/json.h"

namespace cuda_agent {
namespace {

// Rules returns the names of the rules that fire on `code` (as kernels/x.cu).
std::set<std::string> Rules(const std::string& code, const std::string& rel = "kernels/x.cu") {
  std::set<std::string> names;
  for (const StaticViolation& v : ScanSource(code, rel)) names.insert(v.rule);
  return names;
}

std::string Describe(const std::string& code) {
  std::string text;
  for (const StaticViolation& v : ScanSource(code, "kernels/x.cu"))
    text += FormatViolation(v) + "\n";
  return text;
}

#define EXPECT_FIRES(rule, code)                                          \
  EXPECT_TRUE(Rules(code).count(rule)) << "expected " << rule << " on:\n" \
                                       << (code) << "\ngot:\n"            \
                                       << Describe(code)
#define EXPECT_CLEAN(code) \
  EXPECT_TRUE(Rules(code).empty()) << (code) << "\ngot:\n" << Describe(code)

TEST(StaticRules, TableIsComplete) {
  std::set<std::string> names;
  for (const StaticRuleInfo& r : StaticRules()) {
    EXPECT_FALSE(r.rationale.empty()) << r.name;
    EXPECT_FALSE(r.matches.empty()) << r.name;
    EXPECT_TRUE(names.insert(std::string(r.name)).second) << "duplicate " << r.name;
  }
  EXPECT_GE(names.size(), 20u);
}

TEST(StaticRules, EveryRuleIsDocumented) {
  std::string doc = ReadFile(fs::path(CUDA_AGENT_SOURCE_DIR) / "docs" / "static-rules.md").value();
  for (const StaticRuleInfo& r : StaticRules()) {
    EXPECT_NE(doc.find("| `" + std::string(r.name) + "` |"), std::string::npos)
        << r.name << " is missing from docs/static-rules.md";
  }
}

// Every rule names the HACKS.md classes it stops, and docs/hacks.md has a row for each.
TEST(StaticRules, EveryRuleNamesItsHackClasses) {
  std::string doc = ReadFile(fs::path(CUDA_AGENT_SOURCE_DIR) / "docs" / "hacks.md").value();
  for (const StaticRuleInfo& r : StaticRules()) {
    std::istringstream ids{std::string(r.hacks)};
    std::string id;
    int count = 0;
    while (ids >> id) {
      ++count;
      EXPECT_NE(doc.find("\n| " + id + " "), std::string::npos)
          << r.name << ": " << id << " is not a class of docs/hacks.md";
    }
    EXPECT_GT(count, 0) << r.name << " names no HACKS.md class";
  }
}

TEST(StaticRules, CommentsAndStringsNeverFire) {
  EXPECT_CLEAN(
      "// at::relu(x); dlopen(\"x\"); std::thread t;\n"
      "/* static std::unordered_map<int,int> cache; */\n"
      "const char* const kDoc = \"torch::matmul, fork(), system()\";\n");
}

TEST(StaticRules, ForbiddenInclude) {
  EXPECT_FIRES("forbidden_include", "#include <thrust/device_vector.h>\n");
  EXPECT_FIRES("forbidden_include", "#include <cutlass/gemm/device/gemm.h>\n");
  EXPECT_FIRES("forbidden_include", "#include <cublasLt.h>\n");
  EXPECT_FIRES("forbidden_include", "#include <ATen/native/cuda/Loops.cuh>\n");
  EXPECT_FIRES("forbidden_include", "#include <thread>\n");
  EXPECT_FIRES("forbidden_include", "#include <dlfcn.h>\n");
  EXPECT_FIRES("forbidden_include", "#include \"../model.py\"\n");
  EXPECT_FIRES("forbidden_include", "#include \"../../../etc/x.h\"\n");
  EXPECT_FIRES("forbidden_include", "#define H <dlfcn.h>\n#include H\n");
  EXPECT_FIRES("forbidden_include", "#include_next <cuda_runtime.h>\n");
  EXPECT_FIRES("forbidden_include", "%:include <dlfcn.h>\n");
  EXPECT_FIRES("forbidden_include", "#include <cuda/../../../../usr/include/dlfcn.h>\n");
  EXPECT_FIRES("forbidden_include", "#include \"/tmp/x/binding_registry.h\"\n");
  EXPECT_CLEAN(
      "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <mma.h>\n"
      "#include <cooperative_groups/reduce.h>\n#include <cuda/barrier>\n#include <cub/cub.cuh>\n"
      "#include <cublas_v2.h>\n#include <cudnn.h>\n#include <torch/extension.h>\n"
      "#include <c10/cuda/CUDAGuard.h>\n#include <ATen/cuda/CUDAContext.h>\n#include <vector>\n"
      "#include <cstdint>\n#include \"../binding_registry.h\"\n#include \"../plain_binding.h\"\n"
      "#include \"common.cuh\"\n"
      "#include \"sub/tile.cuh\"\n");
}

TEST(StaticRules, OwnHeadersResolveInsideKernels) {
  Result<Candidate> candidate = Candidate::FromFiles(
      {{"kernels/sub/tile.cuh", "#pragma once\n"},
       {"kernels/x.cu", "#include \"sub/tile.cuh\"\n#include \"missing.cuh\"\n"}});
  ASSERT_TRUE(candidate.ok());
  std::vector<StaticViolation> found = ScanCandidate(candidate.value()).violations;
  ASSERT_EQ(found.size(), 1u) << FormatViolation(found.front());
  EXPECT_EQ(found[0].rule, "forbidden_include");
  EXPECT_EQ(found[0].file, "kernels/x.cu");
  EXPECT_EQ(found[0].line, 2);
}

TEST(StaticRules, TorchCompute) {
  EXPECT_FIRES("torch_compute", "auto y = at::relu(x);");
  EXPECT_FIRES("torch_compute", "auto y = torch::matmul(a, b);");
  EXPECT_FIRES("torch_compute", "auto y = ::at::native::relu(x);");
  EXPECT_FIRES("torch_compute", "auto y = torch::randn({4}, opts);");
  EXPECT_FIRES("torch_compute", "auto y = torch::arange(4, opts);");
  EXPECT_FIRES("torch_compute", "torch::Tensor f(torch::Tensor x) { return rand_like(x); }");
  EXPECT_FIRES("torch_compute", "auto y = torch::nn::functional::gelu(x);");
  EXPECT_FIRES("torch_compute", "auto y = at::_ops::relu::call(x);");
  EXPECT_FIRES("torch_compute", "TORCH_LIBRARY_IMPL(aten, CUDA, m) { }");
  // Argument-dependent lookup: an unqualified relu(x) on a Tensor is at::relu.
  EXPECT_FIRES("torch_compute", "torch::Tensor f(torch::Tensor x) { return relu(x); }");
  EXPECT_FIRES("torch_compute",
               "torch::Tensor f(torch::Tensor a, torch::Tensor b) { return cat({a, b}, 0); }");
  EXPECT_CLEAN(
      "torch::Tensor f(const torch::Tensor& x) {\n"
      "  TORCH_CHECK(x.scalar_type() == torch::kFloat32, \"f\");\n"
      "  auto y = torch::empty({x.size(0), 4}, x.options().dtype(at::kHalf));\n"
      "  auto z = torch::empty_like(x);\n"
      "  const c10::cuda::CUDAGuard guard(x.device());\n"
      "  cudaStream_t s = c10::cuda::getCurrentCUDAStream();\n"
      "  cudaStream_t s2 = at::cuda::getCurrentCUDAStream().stream();\n"
      "  c10::ScalarType t = c10::ScalarType::Float;\n"
      "  auto acc = x.packed_accessor32<float, 2, torch::RestrictPtrTraits>();\n"
      "  return y;\n}\n");
  EXPECT_CLEAN(
      "__device__ float relu(float v) { return v > 0 ? v : 0; }\n"
      "__global__ void k(float* y) { y[0] = relu(y[0]); }\n");
}

// Under a policy that lets torch compute (kernelbench), ATen in C++ is allowed; switches, the JIT,
// graphs and operator registration are backend_switch; every other rule holds.
TEST(StaticRules, KernelbenchPolicyAllowsAtenButNoSwitches) {
  PolicyRules kb;
  kb.torch_compute = true;
  auto rules = [&](const std::string& code) {
    std::set<std::string> names;
    for (const StaticViolation& v : ScanSource(code, "kernels/x.cu", kb)) names.insert(v.rule);
    return names;
  };
  for (const char* hybrid :
       {"torch::Tensor f(torch::Tensor x, torch::Tensor w) { return torch::conv2d(x, w); }",
        "torch::Tensor f(torch::Tensor x) { return at::relu(x) + x.sum() * 2; }",
        "torch::Tensor f(torch::Tensor x) { return relu(x); }"}) {
    EXPECT_TRUE(rules(hybrid).empty()) << hybrid;
    EXPECT_FALSE(Rules(hybrid).empty()) << "strict refuses " << hybrid;
  }
  for (const char* hack :
       {"void f() { at::globalContext().setAllowTF32CuBLAS(true); }",
        "void f() { at::globalContext().setBenchmarkCuDNN(true); }",
        "auto m = torch::jit::load(\"m.pt\");", "at::cuda::CUDAGraph g;",
        "TORCH_LIBRARY(mine, m) { }",
        "void f() { c10::impl::ExcludeDispatchKeyGuard g(c10::DispatchKey::Python); }",
        "void f() { c10::cuda::CUDACachingAllocator::emptyCache(); }"}) {
    EXPECT_TRUE(rules(hack).count("backend_switch")) << hack;
    EXPECT_FALSE(Rules(hack).count("backend_switch"))
        << "strict reports it as torch_compute: " << hack;
  }
  std::vector<StaticViolation> v =
      ScanSource("void f() { at::globalContext().setAllowTF32CuDNN(true); }", "kernels/x.cu", kb);
  ASSERT_FALSE(v.empty());
  EXPECT_NE(v.front().message.find("--policy kernelbench"), std::string::npos) << v.front().message;
  EXPECT_TRUE(rules("auto t = torch::pickle_load(bytes);").count("file_io"));
  EXPECT_TRUE(rules("void f(torch::Tensor x) { torch::save(x, \"x.pt\"); }").count("file_io"));
  EXPECT_TRUE(rules("void f() { std::thread t([] {}); t.join(); }").count("host_thread"));
  EXPECT_TRUE(rules("static int calls = 0;").count("static_state"));
  EXPECT_TRUE(rules("void f() { cublasSgemv(0); }").count("library_compute"));
}

TEST(StaticRules, TensorCompute) {
  EXPECT_FIRES("tensor_compute", "torch::Tensor f(torch::Tensor x) { return x.to(torch::kHalf); }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor y) { y.zero_(); }");
  EXPECT_FIRES("tensor_compute", "void f(at::Tensor y) { y.fill_(0); }");
  EXPECT_FIRES("tensor_compute", "torch::Tensor f(torch::Tensor x, double s) { return x * s; }");
  EXPECT_FIRES("tensor_compute", "torch::Tensor f(torch::Tensor x) { return -x; }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor a, torch::Tensor b) { return a + b; }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor y) { y += 1; }");
  EXPECT_FIRES("tensor_compute", "torch::Tensor f(torch::Tensor x) { return x[0]; }");
  EXPECT_FIRES("tensor_compute", "torch::Tensor f(torch::Tensor x) { return x.max(); }");
  EXPECT_FIRES("tensor_compute", "torch::Tensor f(torch::Tensor x) { return x.view({-1}).sum(); }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { auto y = x.t(); return y * 2; }");
  EXPECT_FIRES("tensor_compute", "auto g(int n) { return torch::empty({n}).fill_(1); }");
  EXPECT_FIRES("tensor_compute", "auto g(Foo f) { return f.get().clamp_min(0); }");
  EXPECT_FIRES("tensor_compute", "#define CALL(x) (x).relu()\n");
  EXPECT_CLEAN(
      "torch::Tensor f(torch::Tensor x, torch::Tensor w) {\n"
      "  TORCH_CHECK(x.dim() == 2 && x.size(1) == w.size(1) && x.is_contiguous(), \"f\");\n"
      "  TORCH_CHECK(x.device() == w.device(), \"f\");\n"
      "  const int64_t n = x.numel() * 2 + x.stride(0);\n"
      "  auto v = x.view({-1, 4}).transpose(0, 1);\n"
      "  float* p = x.data_ptr<float>() + n;\n"
      "  auto sizes = x.sizes();\n"
      "  return v;\n}\n"
      "__global__ void k(const float* x, float* y, int n) {\n"
      "  float acc = x[0] * 2.0f + x[1];\n"
      "  y[threadIdx.x] = -acc;\n}\n"
      "void g(std::vector<float>& v, std::complex<float> c) { v.resize(4); float r = c.real(); "
      "}\n");
  // A scalar named like a tensor elsewhere in the file is not a tensor.
  EXPECT_CLEAN(
      "void host(torch::Tensor x) { (void)x.numel(); }\n"
      "__global__ void k(float x) { float y = x * 2.0f; (void)y; }\n");
}

// Real bindings allocate outputs and accumulators with torch::zeros/ones/full (a fill, not the
// model's computation: the kernel audit counts torch's fill kernels as fills) and make inputs
// contiguous or move them to the GPU (data movement; the run-time op guard and the kernel audit
// judge a copy that happens). What computes with such a tensor, or converts its values, still
// fires.
TEST(StaticRules, ConstantTensorsAndDataMovement) {
  EXPECT_CLEAN(
      "#include <torch/extension.h>\n"
      "torch::Tensor f(const torch::Tensor& x, torch::Tensor w) {\n"
      "  auto acc = torch::zeros({x.size(0)}, x.options());\n"
      "  auto y = torch::zeros_like(x);\n"
      "  auto o = at::ones_like(x, at::kFloat);\n"
      "  auto m = torch::full({4}, -INFINITY, x.options().dtype(torch::kFloat32));\n"
      "  at::Tensor n = at::full_like(x, 0.5);\n"
      "  auto z = at::zeros({2, 2}, "
      "torch::TensorOptions().dtype(torch::kInt32).device(x.device()));\n"
      "  auto u = zeros_like(x);\n"
      "  auto k = x.new_zeros({4});\n"
      "  auto c = x.contiguous();\n"
      "  auto t = x.transpose(0, 1).contiguous(at::MemoryFormat::Contiguous);\n"
      "  auto g = torch::zeros({1}, torch::kFloat32).cuda();\n"
      "  auto d = torch::empty({4}, torch::kLong).to(x.device());\n"
      "  auto e = y.to(torch::kCUDA);\n"
      "  auto h = w.to(torch::Device(torch::kCUDA, 0));\n"
      "  auto i = w.to(at::DeviceType::CUDA).contiguous();\n"
      "  return c;\n}\n");
  // Computing with a constant tensor, or with a contiguous copy: the result is a tensor.
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { auto y = torch::zeros_like(x); y.add_(x); "
               "return y; }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { auto y = torch::zeros_like(x); return y * 2; }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { return torch::zeros_like(x) + x; }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { auto y = x.new_ones({4}); return y - 1; }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { return torch::full_like(x, 1.0).mul_(x); }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { auto y = x.contiguous(); return y * 2; }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { return x.contiguous().relu(); }");
  // Operands that are tensor expressions, not names.
  EXPECT_FIRES(
      "tensor_compute",
      "torch::Tensor f(torch::Tensor x) { return torch::zeros_like(x) + x.contiguous(); }");
  EXPECT_FIRES("tensor_compute", "torch::Tensor f(torch::Tensor x) { return 2 * x.view({-1}); }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { return x.contiguous() - x.t(); }");
  // to() with anything but a device converts values; to the host is a host round trip.
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x, torch::Tensor y) { return x.to(y); }");
  EXPECT_FIRES("tensor_compute", "torch::Tensor f(torch::Tensor x) { return x.to(x.options()); }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { return x.to(x.scalar_type()); }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { return x.to(x.device(), torch::kHalf); }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { return x.cuda().to(at::kFloat); }");
  EXPECT_FIRES("tensor_compute", "torch::Tensor f(torch::Tensor x) { return x.to(torch::kCPU); }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { return x.to(torch::Device(\"cpu\")); }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { return x.to(torch::Device(torch::kCPU)); }");
  EXPECT_FIRES("tensor_compute", "torch::Tensor f(torch::Tensor x) { return x.to(cfg.device()); }");
  EXPECT_FIRES("tensor_compute", "torch::Tensor f(torch::Tensor x) { return x.cpu(); }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(std::vector<torch::Tensor> v) { return v[0].to(torch::kHalf); }");
  // copy_ into a tensor (a real solution's `hn[i].copy_(prev)`): data movement; one that converts
  // dtype or device is refused at run time by the op guard (tests/hacks/b11_half_copy_cpp). What
  // computes with its result still fires.
  EXPECT_CLEAN(
      "torch::Tensor f(torch::Tensor x, std::vector<torch::Tensor> h) {\n"
      "  auto y = torch::empty_like(x);\n"
      "  y.copy_(x);\n"
      "  h[0].copy_(x, /*non_blocking=*/true);\n"
      "  return y;\n}\n");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { auto y = torch::empty_like(x); "
               "y.copy_(x).mul_(2); return y; }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { auto y = torch::empty_like(x); "
               "return y.copy_(x) * 2; }");
  // The refusal names what C++ may do with a tensor.
  for (const StaticViolation& v : ScanSource(
           "torch::Tensor f(torch::Tensor x) { return x.to(torch::kHalf); }", "kernels/x.cu")) {
    EXPECT_NE(v.message.find("contiguous(), cuda(), to(x.device())"), std::string::npos)
        << v.message;
    EXPECT_NE(v.message.find("torch::zeros/ones/full"), std::string::npos) << v.message;
  }
}

// The idioms of real KernelBench bindings (load_inline solutions) scan clean: CHECK_INPUT macros of
// the file's own (with # stringification), TORCH_CHECK, Tensor& parameters, std::vector<Tensor>
// results, the current stream, AT_DISPATCH over scalar_type(), options().dtype(), device guards.
TEST(StaticRules, KernelBenchBindingIdioms) {
  EXPECT_CLEAN(
      "#include <torch/extension.h>\n"
      "#include <ATen/cuda/CUDAContext.h>\n"
      "#include <c10/cuda/CUDAGuard.h>\n"
      "#define CHECK_CUDA(x) TORCH_CHECK(x.device().is_cuda(), #x \" must be a CUDA tensor\")\n"
      "#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x \" must be contiguous\")\n"
      "#define CHECK_INPUT(x) \\\n  CHECK_CUDA(x);       \\\n  CHECK_CONTIGUOUS(x)\n"
      "template <typename scalar_t>\n"
      "__global__ void k(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n) {}\n"
      "std::vector<torch::Tensor> f(torch::Tensor& x, const torch::Tensor& w, int64_t dim) {\n"
      "  CHECK_INPUT(x);\n"
      "  TORCH_CHECK(x.is_cuda(), \"x\");\n"
      "  const at::cuda::OptionalCUDAGuard guard(device_of(x));\n"
      "  auto stream = at::cuda::getCurrentCUDAStream();\n"
      "  cudaStream_t s2 = c10::cuda::getCurrentCUDAStream().stream();\n"
      "  auto y = torch::empty({x.size(0), x.size(-1)}, x.options().dtype(torch::kFloat32));\n"
      "  auto z = x.new_empty({4});\n"
      "  const int64_t n = x.numel();\n"
      "  const int threads = 256;\n"
      "  const int blocks = (n + threads - 1) / threads;\n"
      "  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), \"f\", ([&] {\n"
      "    k<scalar_t><<<blocks, threads, 0, stream>>>(x.data_ptr<scalar_t>(),\n"
      "                                                 y.data_ptr<scalar_t>(), n);\n"
      "  }));\n"
      "  C10_CUDA_KERNEL_LAUNCH_CHECK();\n"
      "  AT_CUDA_CHECK(cudaGetLastError());\n"
      "  return {y, z};\n}\n");
}

// Issue 46: idioms of third-party KernelBench solutions that only read metadata, take views or
// move data, each beside the cheat that looks like it and is still refused.
TEST(StaticRules, PackedAccessorIsMetadata) {
  EXPECT_CLEAN(
      "torch::Tensor f(torch::Tensor x, torch::Tensor y) {\n"
      "  auto a = x.packed_accessor<float, 2>();\n"
      "  auto b = y.packed_accessor<float,4,torch::RestrictPtrTraits,size_t>();\n"
      "  k<<<1, 32>>>(a, b);\n"
      "  return y;\n}\n");
  EXPECT_FIRES("tensor_compute",
               "void f(torch::Tensor x) { auto a = x.to(torch::kHalf).packed_accessor<at::Half, "
               "2>(); }");
}

TEST(StaticRules, ReshapeAndFlattenAreDataMovement) {
  EXPECT_CLEAN(
      "torch::Tensor f(torch::Tensor x, torch::Tensor w) {\n"
      "  auto a = x.reshape({x.size(0), -1});\n"
      "  auto b = x.flatten();\n"
      "  auto c = x.flatten(1);\n"
      "  auto out = torch::empty({a.size(0)}, x.options());\n"
      "  k<<<1, 32>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(),\n"
      "               out.data_ptr<float>());\n"
      "  return out.view_as(w).reshape({-1, 4});\n}\n");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { auto y = x.reshape({-1}); return y * 2; }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { return x.flatten(1).sum(1); }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x, torch::Tensor w) { return x.view_as(w) + w; }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x) { return x.reshape_as(x).relu(); }");
}

TEST(StaticRules, IntegerSubscriptIsAView) {
  EXPECT_CLEAN(
      "torch::Tensor f(torch::Tensor input, torch::Tensor x, torch::Tensor w, int64_t n) {\n"
      "  auto out = torch::empty_like(x);\n"
      "  for (int64_t b = 0; b < input.size(0); ++b) {\n"
      "    k<<<1, 32>>>(input[b].data_ptr<float>(), out[b][0].data_ptr<float>(), n);\n"
      "  }\n"
      "  for (int i = 0; i < n; ++i) {\n"
      "    auto xb = x[i];\n"
      "    torch::Tensor wb = w[i * 2 + 1];\n"
      "    k<<<1, 32>>>(xb.data_ptr<float>(), wb.data_ptr<float>(), n);\n"
      "    launch(x[i], out[n - 1 - i], xb.size(0));\n"
      "  }\n"
      "  return out;\n}\n");
  // Indexing that computes (masks, index tensors, Slice, writes, arithmetic, conversions), and a
  // tensor inside the index, refused conservatively even as x.size(0) - 1.
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x, torch::Tensor mask) { auto y = x[mask]; return "
               "y; }");
  EXPECT_FIRES("tensor_compute",
               "torch::Tensor f(torch::Tensor x, torch::Tensor idx) { return x[idx].data_ptr<"
               "float>(); }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor x, int i) { x[i] = 0; }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor x, torch::Tensor y, int i) { x[i] = y; }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor x, int i) { x[i] += 1; }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor x, int i) { auto y = x[i] * 2; }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor x, int i) { auto y = 2 * x[i]; }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor x, int i) { auto y = (x[i]) * 2; }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor x, int i) { x[i].fill_(1); }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor x) { auto y = x[0].sum(); }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor x) { bool b = x[0] < 1; }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor x) { float v = x[0]; }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor x) { auto y = x[x.size(0) - 1]; }");
  EXPECT_FIRES("tensor_compute",
               "void f(torch::Tensor x) { auto y = x[torch::indexing::Slice(0, 2)]; }");
  EXPECT_FIRES("torch_compute", "void f(torch::Tensor x) { auto y = relu(x[0]); }");
  EXPECT_FIRES("tensor_compute", "void f(torch::Tensor x, int i) { auto y = x[i]; y.zero_(); }");
}

TEST(StaticRules, SetDeviceToTheInputsOwnDevice) {
  EXPECT_CLEAN(
      "void f(torch::Tensor x, const at::Tensor& y) {\n"
      "  cudaSetDevice(x.device().index());\n"
      "  cudaSetDevice(y.get_device());\n}\n");
  EXPECT_FIRES("device_state", "void f(torch::Tensor x) { cudaSetDevice(0); }");
  EXPECT_FIRES("device_state", "void f(torch::Tensor x, int d) { cudaSetDevice(d); }");
  EXPECT_FIRES("device_state", "void f(Cfg c) { cudaSetDevice(c.get_device()); }");
  EXPECT_FIRES("device_state", "void f(torch::Tensor x) { cudaSetDevice(x.get_device() + 1); }");
  EXPECT_FIRES("device_state", "#define SET(x) cudaSetDevice(x.get_device())\n");
  EXPECT_FIRES("device_state", "void f(torch::Tensor x) { cudaDeviceReset(); }");
  for (const StaticViolation& v :
       ScanSource("void f(int d) { cudaSetDevice(d); }", "kernels/x.cu")) {
    EXPECT_NE(v.message.find("CUDAGuard"), std::string::npos) << v.message;
  }
}

TEST(StaticRules, UnusedCufftIncludeIsAccepted) {
  EXPECT_CLEAN("#include <cufft.h>\n#include <torch/extension.h>\nvoid f() {}\n");
  EXPECT_FIRES("library_compute",
               "#include <cufft.h>\nvoid f(cufftComplex* p) { cufftHandle h; "
               "cufftPlan1d(&h, 64, CUFFT_C2C, 1); cufftExecC2C(h, p, p, CUFFT_FORWARD); }");
  EXPECT_FIRES("library_compute", "void f(void* p) { cufftExecR2C(0, p, p); }");
  EXPECT_FIRES("forbidden_include", "#include <cufftw.h>\n");
  EXPECT_CLEAN("#include <cufftXt.h>\nvoid f() {}\n");
  EXPECT_FIRES("library_compute", "#include <cufftXt.h>\nvoid f() { cufftXtExec(0, 0, 0, 0); }");
}

TEST(StaticRules, TorchNamespaceAlias) {
  EXPECT_FIRES("torch_namespace_alias", "using namespace torch;");
  EXPECT_FIRES("torch_namespace_alias", "using namespace at::native;");
  EXPECT_FIRES("torch_namespace_alias", "namespace T = ::torch;");
  EXPECT_CLEAN(
      "using torch::Tensor;\nnamespace cg = cooperative_groups;\nusing namespace nvcuda;\n");
}

TEST(StaticRules, LibraryCompute) {
  EXPECT_FIRES("library_compute",
               "void f(cublasHandle_t h) { cublasSaxpy(h, n, &a, x, 1, y, 1); }");
  EXPECT_FIRES("library_compute",
               "void f(cublasHandle_t h) { cublasSgemv(h, op, m, n, &a, A, m, x, 1, &b, y, 1); }");
  EXPECT_FIRES("library_compute",
               "void f() { cublasLtMatmul(h, d, a, A, ad, B, bd, b, C, cd, D, dd, 0, 0, 0, s); }");
  EXPECT_FIRES("library_compute",
               "void f() { cudnnActivationForward(h, d, &a, xd, x, &b, yd, y); }");
  EXPECT_FIRES("library_compute", "void f() { cudnnConvolutionBiasActivationForward(h); }");
  EXPECT_FIRES("library_compute", "void f() { cub::DeviceReduce::Sum(t, n, in, out, c, s); }");
  EXPECT_FIRES("library_compute", "void f() { thrust::transform(a, b, c, op); }");
  EXPECT_FIRES("library_compute", "void f() { curandGenerateNormal(g, p, n, 0, 1); }");
  EXPECT_CLEAN(
      "void f(cublasHandle_t h, cudaStream_t s) {\n"
      "  cublasSetStream(h, s);\n"
      "  cublasStatus_t st = cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &a, A, k, B, k, &b, "
      "C, m);\n"
      "  cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &a, A, CUDA_R_32F, m, B, CUDA_R_32F, "
      "k,\n"
      "               &b, C, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);\n"
      "  cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &a, A, m, 0, B, k, 0, &b, "
      "C, m, 0, 2);\n"
      "  cudnnConvolutionForward(dh, &a, xd, x, wd, w, cd, algo, ws, wss, &b, yd, y);\n"
      "  cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, "
      "CUDNN_DATA_FLOAT);\n"
      "}\n"
      "__global__ void k(float* x) {\n"
      "  using BlockReduce = cub::BlockReduce<float, 256>;\n"
      "  __shared__ typename BlockReduce::TempStorage tmp;\n"
      "  float s = BlockReduce(tmp).Sum(x[threadIdx.x]);\n"
      "  (void)s;\n}\n");
}

TEST(StaticRules, PythonApi) {
  EXPECT_FIRES("python_api", "void f() { auto t = py::module_::import(\"torch\"); }");
  EXPECT_FIRES("python_api", "void f() { PyObject* m = PyImport_ImportModule(\"torch.cuda\"); }");
  EXPECT_FIRES("python_api", "void f(py::object o) { o.attr(\"synchronize\") = o; }");
  EXPECT_FIRES("python_api", "void f() { py::exec(\"import torch\"); }");
  EXPECT_FIRES("python_api", "PYBIND11_MODULE(other, m) {}");
  EXPECT_CLEAN(
      "static void register_x(pybind11::module& m) {\n"
      "  m.def(\"x_forward\", &x_forward, py::arg(\"x\"), py::arg(\"config\") = 0,\n"
      "        py::call_guard<py::gil_scoped_release>());\n}\n"
      "REGISTER_BINDING(x, register_x);\n");
}

TEST(StaticRules, SymbolReadBackIsGlobalState) {
  // A __constant__ counter: written with cudaMemcpyToSymbol (allowed: constant weights), read back.
  EXPECT_FIRES("global_state",
               "__constant__ int calls;\nvoid f() { int n; cudaMemcpyFromSymbol(&n, calls, 4); }");
  EXPECT_FIRES("global_state", "void f() { void* p; cudaGetSymbolAddress(&p, calls); }");
  EXPECT_CLEAN(
      "__constant__ float w[16];\nvoid f(const float* h) { cudaMemcpyToSymbol(w, h, 64); }");
}

TEST(StaticRules, SideStream) {
  // Own streams are allowed (the profile checks at run time that their work is joined).
  EXPECT_CLEAN("void f() { cudaStream_t s; cudaStreamCreate(&s); cudaStreamDestroy(s); }");
  EXPECT_CLEAN("void f() { cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); }");
  EXPECT_FIRES("side_stream", "void f() { c10::cuda::setCurrentCUDAStream(s); }");
  EXPECT_FIRES("side_stream", "void f() { c10::cuda::CUDAStreamGuard g(s); }");
  EXPECT_FIRES("side_stream", "void f() { k<<<1, 1, 0, cudaStreamPerThread>>>(); }");
  EXPECT_CLEAN(
      "void f(cudaStream_t stream) { k<<<1, 32, 0, stream>>>(); cudaEvent_t e;\n"
      "  cudaEventCreate(&e); cudaEventRecord(e, stream); cudaStreamWaitEvent(stream, e, 0);\n"
      "  cudaStreamSynchronize(stream); cudaDeviceSynchronize(); }\n");
}

TEST(StaticRules, HostThread) {
  EXPECT_FIRES("host_thread", "void f() { std::thread t([] {}); t.detach(); }");
  EXPECT_FIRES("host_thread", "void f() { auto r = std::async(std::launch::async, g); }");
  EXPECT_FIRES("host_thread", "void f() { pthread_create(&t, nullptr, run, nullptr); }");
  EXPECT_FIRES("host_thread", "void f(cudaStream_t s) { cudaLaunchHostFunc(s, cb, nullptr); }");
  EXPECT_FIRES("host_thread", "using namespace std;\nvoid f() { thread t(g); }");
  EXPECT_CLEAN("__global__ void k() { int thread = threadIdx.x; (void)thread; }");
}

TEST(StaticRules, HostRoundtrip) {
  EXPECT_FIRES("host_roundtrip", "void f() { cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost); }");
  EXPECT_FIRES("host_roundtrip", "__managed__ float buf[16];");
  EXPECT_FIRES("host_roundtrip", "void f() { cudaMallocManaged(&p, n); }");
  EXPECT_CLEAN(
      "void f(cudaStream_t s) { cudaMemsetAsync(p, 0, n, s);\n"
      "  cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s);\n"
      "  cudaMemcpyToSymbolAsync(kTable, h, n, 0, cudaMemcpyHostToDevice, s); }\n");
}

TEST(StaticRules, L2Persistence) {
  EXPECT_FIRES("l2_persistence",
               "void f(cudaStream_t s) { cudaStreamAttrValue a = {};\n"
               "  a.accessPolicyWindow.base_ptr = p;\n"
               "  cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &a); }");
  EXPECT_FIRES("l2_persistence",
               "void f() { cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, n); }");
  EXPECT_FIRES("l2_persistence",
               "void f(cudaLaunchAttribute* a) { a->val.accessPolicyWindow.hitRatio = 1; }");
  EXPECT_FIRES("l2_persistence",
               "__device__ void f() { asm volatile(\"createpolicy.fractional.L2::evict_last.b64 "
               "%0, 1.0;\" : \"=l\"(p)); }");
  EXPECT_FIRES(
      "l2_persistence",
      "__device__ void f() { cuda::access_property p(cuda::access_property::persisting{}); }");
  EXPECT_CLEAN(
      "void f() { cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 100000); }\n"
      "__device__ void g(const float* p) { float v; asm volatile(\"ld.global.nc.f32 %0, [%1];\" : "
      "\"=f\"(v) : \"l\"(p)); }\n");
}

TEST(StaticRules, DeviceState) {
  EXPECT_FIRES("device_state", "void f() { cudaDeviceReset(); }");
  EXPECT_FIRES("device_state", "void f() { cudaSetDevice(1); }");
  EXPECT_FIRES("device_state", "void f() { cudaIpcGetMemHandle(&h, p); }");
  EXPECT_CLEAN(
      "void f() { int d; cudaGetDevice(&d); cudaDeviceProp p; cudaGetDeviceProperties(&p, d); }");
}

TEST(StaticRules, StaticState) {
  EXPECT_FIRES("static_state", "static std::unordered_map<void*, torch::Tensor> cache;");
  EXPECT_FIRES("static_state",
               "torch::Tensor f(torch::Tensor x) { static torch::Tensor last; return last; }");
  EXPECT_FIRES("static_state", "void f() { static float* buffer = nullptr; }");
  EXPECT_FIRES("static_state", "void f() { static const float* buffer = nullptr; }");
  EXPECT_FIRES("static_state", "void f() { static int calls = 0; ++calls; }");
  EXPECT_FIRES("static_state", "void f() { static cublasHandle_t handle; }");
  EXPECT_FIRES("static_state", "static __device__ float g_out[1 << 20];");
  EXPECT_FIRES("static_state", "void f() { thread_local int n = 0; }");
  EXPECT_FIRES("static_state", "struct S { static int count; };");
  EXPECT_FIRES("static_state", "void f() { static Foo foo(1, 2); }");
  EXPECT_FIRES("static_state", "void f() { static void (*hook)() = nullptr; }");
  EXPECT_CLEAN(
      "static unsigned grid_for(int64_t work, int threads) { return 1; }\n"
      "static torch::Tensor fwd(torch::Tensor x, double s);\n"
      "static inline __device__ __forceinline__ float sq(float v) { return v * v; }\n"
      "static __global__ void __launch_bounds__(256) k(float* y) { }\n"
      "static constexpr int kTile = 64;\n"
      "static const int kWarps = 8;\n"
      "static const char* const kName = \"x\";\n"
      "static const float kTable[4] = {1, 2, 3, 4};\n"
      "struct Cfg { static constexpr int kN = 4; static Cfg Make(); };\n"
      "template <int N> static __device__ float sum(const float* x) { return x[0]; }\n"
      "__global__ void k2() { __shared__ float tile[64]; static __shared__ float t2[8]; }\n"
      "void g() { auto n = static_cast<int>(3.0); static_assert(sizeof(int) == 4, \"\"); }\n");
}

// MessageOf is the message of the first violation of `rule` on `code`, or "" when it does not fire.
std::string MessageOf(const std::string& rule, const std::string& code) {
  for (const StaticViolation& v : ScanSource(code, "kernels/x.cu")) {
    if (v.rule == rule) return v.message;
  }
  return "";
}

// A legitimate idiom done the refused way: the message names the allowed way, not only the rule.
TEST(StaticRules, RefusedIdiomsNameTheAllowedWay) {
  struct Case {
    const char* rule;
    const char* code;
    const char* allowed;
  };
  const Case cases[] = {
      {"static_state",
       "cublasHandle_t get() { static cublasHandle_t handle = nullptr; return handle; }",
       "at::cuda::getCurrentCUDABlasHandle()"},
      {"global_state", "cublasHandle_t g_handle = nullptr;",
       "at::cuda::getCurrentCUDABlasHandle()"},
      {"static_state", "void f() { static cudaStream_t stream; }",
       "at::cuda::getCurrentCUDAStream()"},
      {"static_state", "void f() { static at::cuda::CUDAStream s = make(); }",
       "at::cuda::getCurrentCUDAStream()"},
      {"static_state", "int sms() { static cudaDeviceProp prop; return prop.multiProcessorCount; }",
       "at::cuda::getCurrentDeviceProperties()"},
      {"static_state", "void f() { static torch::Tensor workspace; }",
       "torch::empty(..., x.options())"},
      {"static_state", "void f() { static cudnnHandle_t h; }", "cudnnSetStream"},
      {"side_stream", "void f() { cudaStream_t s = cudaStreamPerThread; }",
       "at::cuda::getCurrentCUDAStream()"},
      {"host_thread", "void f() { std::thread t(g); t.join(); }",
       "at::cuda::getCurrentCUDAStream()"},
      {"host_thread", "void f() { cudaLaunchHostFunc(s, g, nullptr); }",
       "at::cuda::getCurrentCUDAStream()"},
      {"device_state", "void f() { cudaSetDevice(1); }", "c10::cuda::CUDAGuard"},
      {"python_api", "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"f\", &f); }",
       "REGISTER_BINDING"},
      {"torch_compute", "auto y = at::relu(x);", "torch::empty*/zeros*/ones*/full*"},
      {"tensor_compute", "void f(torch::Tensor y) { y.zero_(); }", "torch::zeros/ones/full"},
  };
  for (const Case& c : cases) {
    std::string message = MessageOf(c.rule, c.code);
    EXPECT_NE(message.find(c.allowed), std::string::npos)
        << c.rule << " on " << c.code << ": the message must name " << c.allowed << ", got '"
        << message << "'";
  }
  // Without a known idiom the general advice stays.
  EXPECT_NE(MessageOf("static_state", "void f() { static int calls = 0; }")
                .find("allocate per call, or make it const/constexpr"),
            std::string::npos);
  EXPECT_EQ(MessageOf("device_state", "void f() { cudaDeviceReset(); }"),
            "`cudaDeviceReset` changes device-wide state");
}

TEST(StaticRules, GlobalState) {
  EXPECT_FIRES("global_state", "std::unordered_map<void*, float*> cache;");
  EXPECT_FIRES("global_state", "__device__ unsigned int counter;");
  EXPECT_FIRES("global_state", "__device__ float scratch[1 << 20];");
  EXPECT_FIRES("global_state", "namespace { int calls = 0; }");
  EXPECT_FIRES("global_state", "float* g_buffer = nullptr;");
  EXPECT_FIRES("global_state", "int g_seen{0};");
  EXPECT_FIRES("global_state", "extern \"C\" { int g_calls; }");
  EXPECT_FIRES("global_state", "template <int N> int g_table[] = {N, 2};");
  EXPECT_CLEAN(
      "namespace {\nconstexpr int kTile = 64;\nconst float kScale = 2.0f;\n"
      "__constant__ float kWeights[16];\n__device__ const float kBias[2] = {1, 2};\n"
      "__device__ __forceinline__ float f(float v) { return v; }\n}  // namespace\n"
      "extern \"C\" cudaError_t launcher(const float* x, float* y, int64_t n, cudaStream_t s);\n"
      "extern \"C\" void other(const float* x) {\n  int local = 0;\n  (void)local;\n}\n"
      "template <typename T> __global__ void k(const T* x) { }\n"
      "template <int ITEMS_PER_THREAD = 8> __global__ void g(float* y) { y[0] = ITEMS_PER_THREAD; "
      "}\n"
      "enum class Mode { kA, kB };\n"
      "struct Params { int n; float s; };\n"
      "using Fn = void (*)(int);\n"
      "REGISTER_BINDING(x, register_x);\n"
      "const auto kLambda = [](int v) { return v; };\n"
      "extern __shared__ float dynamic_smem[];\n");
}

TEST(StaticRules, DynamicLoading) {
  EXPECT_FIRES("dynamic_loading", "void f() { void* h = dlopen(\"libcublas.so\", RTLD_NOW); }");
  EXPECT_FIRES("dynamic_loading",
               "void f() { auto g = dlsym(RTLD_DEFAULT, \"cudaEventElapsedTime\"); }");
  EXPECT_FIRES("dynamic_loading", "void f() { cuModuleLoadData(&m, image); }");
  EXPECT_FIRES("dynamic_loading", "void f() { nvrtcCreateProgram(&p, src, \"k\", 0, 0, 0); }");
  EXPECT_FIRES("dynamic_loading",
               "void f() { cudaGetDriverEntryPoint(\"cuStreamCreate\", &fn, cudaEnableDefault); }");
  EXPECT_CLEAN(
      "void f() { cudaGetDriverEntryPoint(\"cuTensorMapEncodeTiled\", &fn, cudaEnableDefault, &q); "
      "}");
}

TEST(StaticRules, SymbolInterposition) {
  EXPECT_FIRES(
      "symbol_interposition",
      "extern \"C\" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {\n"
      "  *ms = 0.001f; return cudaSuccess; }");
  EXPECT_FIRES("symbol_interposition",
               "extern \"C\" int clock_gettime(int c, void* t) { return 0; }");
  EXPECT_CLEAN(
      "extern \"C\" cudaError_t cuda_relu_launcher(const float* x) { return cudaGetLastError(); }\n"
      "void f() { cudaError_t e = cudaDeviceSynchronize(); (void)e; }\n");
}

TEST(StaticRules, LinkerTricks) {
  EXPECT_FIRES("linker_tricks", "__attribute__((constructor)) static void init() {}");
  EXPECT_FIRES("linker_tricks", "[[gnu::constructor]] void init() {}");
  EXPECT_FIRES("linker_tricks", "#pragma weak cudaEventRecord\n");
  EXPECT_FIRES("linker_tricks", "_Pragma(\"weak cudaEventRecord\")\n");
  EXPECT_CLEAN(
      "__attribute__((visibility(\"hidden\"))) void f() {}\n"
      "__device__ __attribute__((always_inline)) float g(float v) { return v; }\n"
      "#pragma unroll 4\n#pragma once\n");
}

TEST(StaticRules, TimerPatching) {
  EXPECT_FIRES("timer_patching", "void f() { mprotect(page, 4096, PROT_READ | PROT_WRITE); }");
  EXPECT_FIRES("timer_patching", "void f() { cuptiActivityDisable(CUPTI_ACTIVITY_KIND_KERNEL); }");
  EXPECT_FIRES("timer_patching", "void f() { cudaProfilerStop(); }");
}

TEST(StaticRules, ClockRead) {
  EXPECT_FIRES("clock_read", "void f() { auto t = std::chrono::steady_clock::now(); }");
  EXPECT_FIRES("clock_read", "__global__ void k(long long* t) { t[0] = clock64(); }");
  EXPECT_FIRES("clock_read",
               "__device__ long long g() { long long t; asm volatile(\"mov.u64 %0, "
               "%%globaltimer;\" : \"=l\"(t)); return t; }");
  EXPECT_FIRES("clock_read", "void f() { cudaEventElapsedTime(&ms, a, b); }");
  EXPECT_CLEAN(
      "__global__ void k(float time) { float clock = time * 2.0f; (void)clock; __nanosleep(100); "
      "}");
}

TEST(StaticRules, ProcessEscapeAndFiles) {
  EXPECT_FIRES("process_escape", "void f() { system(\"nvidia-smi\"); }");
  EXPECT_FIRES("process_escape", "void f() { const char* p = std::getenv(\"HOME\"); }");
  EXPECT_FIRES("process_escape", "void f() { if (fork() == 0) {} }");
  EXPECT_FIRES("process_escape", "void f() { execvp(\"sh\", argv); }");
  EXPECT_FIRES("file_io", "void f() { FILE* fp = fopen(\"/tmp/expected.pt\", \"rb\"); }");
  EXPECT_FIRES("file_io", "void f() { std::ifstream in(\"x\"); }");
  EXPECT_FIRES("file_io", "void f() { int fd = open(\"x\", 0); }");
  EXPECT_FIRES("file_io",
               "void f() { for (auto& e : std::filesystem::directory_iterator(\"/\")) {} }");
  EXPECT_CLEAN(
      "void f(std::vector<int>& v) { v.erase(std::remove(v.begin(), v.end(), 0), v.end());\n"
      "  printf(\"%d\\n\", 1); std::cout << 1; }\n"
      "struct S { void open(); };\nvoid g(S& s) { s.open(); }\n");
}

TEST(StaticRules, AsmEscapeAndHiddenIdentifiers) {
  EXPECT_FIRES("asm_escape", "asm(\".incbin \\\"/work/expected.bin\\\"\");");
  EXPECT_FIRES("asm_escape", "void f() { asm volatile(\"syscall\"); }");
  EXPECT_FIRES("hidden_identifier", "#define CAT(a, b) a##b\nauto y = CAT(at::re, lu)(x);");
  EXPECT_FIRES("hidden_identifier", "%:define CAT(a, b) a%:%:b\n");
  EXPECT_FIRES("hidden_identifier", "void f() { dl\\u006fpen(0, 0); }");
  EXPECT_CLEAN(
      "#define STR(x) #x\nconst char* const kS = \"\\u00e9\";\n__device__ void f() { asm "
      "volatile(\"bar.sync 0;\"); }\n");
}

TEST(StaticRules, ViolationsNameFileLineAndRule) {
  std::vector<StaticViolation> found =
      ScanSource("#include <cuda_runtime.h>\n\nvoid f() {\n  system(\"ls\");\n}\n", "kernels/a.cu");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rule, "process_escape");
  EXPECT_EQ(found[0].file, "kernels/a.cu");
  EXPECT_EQ(found[0].line, 4);
  EXPECT_EQ(FormatViolation(found[0]).rfind("process_escape: kernels/a.cu:4: ", 0), 0u);
}

// No input makes the scan slow: a 1 MiB file of unbalanced brackets, statics, declarations and
// calls is scanned in well under a second.
TEST(StaticRules, AdversarialInputStaysFast) {
  std::string text;
  while (text.size() < (1u << 20) - 200) {
    text += "torch::Tensor a(torch::Tensor x) { static static auto y = x; relu(x, ( f(x.view(";
    text += "template<<<a>>> __attribute__((( static_cast<T<U<V>>>( [ { x.max() < y\n";
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<StaticViolation> found = ScanSource(text, "kernels/x.cu");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(found.empty());
  EXPECT_LE(found.size(), 100u);
  EXPECT_LT(seconds, 5.0);
}

}  // namespace
}  // namespace cuda_agent
