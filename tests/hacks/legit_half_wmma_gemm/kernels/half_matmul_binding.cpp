#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" cudaError_t half_matmul_wmma_launcher(const void* A, const void* B, void* C, int64_t M,
                                                 int64_t K, int64_t N, int vec_a, int vec_b,
                                                 int config, cudaStream_t stream);

static bool Aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

static torch::Tensor half_matmul_forward(const torch::Tensor& A, const torch::Tensor& B) {
  TORCH_CHECK(A.is_cuda() && B.is_cuda(), "half_matmul: A and B must be CUDA tensors");
  TORCH_CHECK(A.device() == B.device(), "half_matmul: A and B must be on one device");
  TORCH_CHECK(A.scalar_type() == torch::kHalf && B.scalar_type() == torch::kHalf,
              "half_matmul: A and B must be float16");
  TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && A.size(1) == B.size(0),
              "half_matmul: expected A (M, K) and B (K, N)");
  TORCH_CHECK(A.is_contiguous() && B.is_contiguous(), "half_matmul: A and B must be contiguous");
  const int64_t M = A.size(0), K = A.size(1), N = B.size(1);
  const c10::cuda::CUDAGuard guard(A.device());
  torch::Tensor C = torch::empty({M, N}, A.options());
  const void* a = A.data_ptr();
  const void* b = B.data_ptr();
  const int vec_a = (K % 8 == 0 && Aligned16(a)) ? 1 : 0;
  const int vec_b = (N % 8 == 0 && Aligned16(b)) ? 1 : 0;
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  cudaError_t err = half_matmul_wmma_launcher(a, b, C.data_ptr(), M, K, N, vec_a, vec_b,
                                              /*config=*/0, stream);
  TORCH_CHECK(err == cudaSuccess, "half_matmul: launch failed: ", cudaGetErrorString(err));
  return C;
}

static void register_half_matmul(pybind11::module& m) {
  m.def("half_matmul_forward", &half_matmul_forward, py::arg("A"), py::arg("B"));
}
REGISTER_BINDING(half_matmul, register_half_matmul);
