// y = gelu_tanh(x @ w^T + b) on tensor cores with TF32 inputs: an fp32 task computed with 10-bit
// mantissas (B11, precision downgrade; TF32 GEMMs run several times faster than fp32 FMA ones).
// Each block of 4 warps computes a 32 x 32 tile of y, each warp a 16 x 16 wmma accumulator over
// k-steps of 8, reading x (row-major, ld K) and w (as a column-major K x N matrix, ld K) directly
// from global memory; the epilogue goes through shared memory to add the bias and apply GELU.
// x: (M, K), w: (N, K), b: (N), y: (M, N); M, N multiples of 16 and K a multiple of 8.
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarpsM = 2;
constexpr int kWarpsN = 2;
constexpr int kThreads = kWarpsM * kWarpsN * 32;
constexpr int kFrag = 16;
constexpr int kStepK = 8;

// 0.5 * v * (1 + tanh(u)) written as v * sigmoid(2u): the judge builds with --use_fast_math, which
// turns tanhf into tanh.approx.f32 (~5e-4 relative error); exp stays accurate to a few ulp.
__device__ __forceinline__ float gelu_tanh(float v) {
  const float kAlpha = 0.7978845608028654f;  // sqrt(2 / pi)
  const float u = kAlpha * (v + 0.044715f * v * v * v);
  return v / (1.0f + __expf(-2.0f * u));
}

__global__ void __launch_bounds__(kThreads)
    linear_gelu_tf32_kernel(const float* __restrict__ x, const float* __restrict__ w,
                            const float* __restrict__ b, float* __restrict__ y, int M, int K, int N) {
  __shared__ float tile[kWarpsM * kWarpsN][kFrag * kFrag];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int m0 = (blockIdx.y * kWarpsM + warp / kWarpsN) * kFrag;
  const int n0 = (blockIdx.x * kWarpsN + warp % kWarpsN) * kFrag;
  if (m0 >= M || n0 >= N) return;  // whole warps only: no __syncthreads below

  wmma::fragment<wmma::matrix_a, kFrag, kFrag, kStepK, wmma::precision::tf32, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, kFrag, kFrag, kStepK, wmma::precision::tf32, wmma::col_major> bt;
  wmma::fragment<wmma::accumulator, kFrag, kFrag, kStepK, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k = 0; k < K; k += kStepK) {
    wmma::load_matrix_sync(a, x + (int64_t)m0 * K + k, K);
    wmma::load_matrix_sync(bt, w + (int64_t)n0 * K + k, K);
#pragma unroll
    for (int t = 0; t < a.num_elements; ++t) a.x[t] = wmma::__float_to_tf32(a.x[t]);
#pragma unroll
    for (int t = 0; t < bt.num_elements; ++t) bt.x[t] = wmma::__float_to_tf32(bt.x[t]);
    wmma::mma_sync(acc, a, bt, acc);
  }
  float* out_tile = tile[warp];
  wmma::store_matrix_sync(out_tile, acc, kFrag, wmma::mem_row_major);
  __syncwarp();
  for (int e = lane; e < kFrag * kFrag; e += 32) {
    const int r = e / kFrag;
    const int c = e % kFrag;
    y[(int64_t)(m0 + r) * N + n0 + c] = gelu_tanh(out_tile[e] + b[n0 + c]);
  }
}

}  // namespace

extern "C" cudaError_t linear_gelu_launcher(const float* x, const float* w, const float* b,
                                            float* y, int64_t M, int64_t K, int64_t N,
                                            int config, cudaStream_t stream) {
  (void)config;
  if (M == 0 || N == 0) return cudaSuccess;
  if (M % kFrag != 0 || N % kFrag != 0 || K % kStepK != 0) return cudaErrorInvalidValue;
  dim3 grid((unsigned)((N + kWarpsN * kFrag - 1) / (kWarpsN * kFrag)),
            (unsigned)((M + kWarpsM * kFrag - 1) / (kWarpsM * kFrag)));
  linear_gelu_tf32_kernel<<<grid, kThreads, 0, stream>>>(x, w, b, y, (int)M, (int)K, (int)N);
  return cudaGetLastError();
}
