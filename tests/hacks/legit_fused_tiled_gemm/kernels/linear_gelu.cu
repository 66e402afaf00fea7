// y = gelu_tanh(x @ W^T + b) in one kernel of our own: a shared-memory tiled fp32 GEMM with register
// blocking, bias and GELU fused into the epilogue. Plain FFMA on CUDA cores: no WMMA/mma, no TF32,
// no tensor cores, so the results are fp32-accurate (only the summation order differs from cuBLAS).
// x: (M, K), W: (N, K), b: (N), y: (M, N), all row-major float32.
//
// Block tile 64 x 64, k-step 16, 256 threads. Each thread owns a 4 x 4 block of y (4 consecutive
// rows, 4 consecutive columns), read from shared memory as float4s: the x and W tiles are stored
// k-major (transposed) so that the 4 values a thread needs for one k are contiguous. The next
// k-step's tiles are fetched into registers while the current one is being multiplied.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kTileM = 64;
constexpr int kTileN = 64;
constexpr int kTileK = 16;
constexpr int kThreads = 256;
constexpr int kMicro = 4;                 // rows and columns of y per thread
constexpr int kPad = 4;                   // keeps rows 16-byte aligned, spreads banks
constexpr int kColThreads = kTileN / kMicro;  // 16 threads across a tile's columns

static_assert(kTileM * kTileK == kThreads * 4, "one float4 of x per thread per k-step");
static_assert(kTileN * kTileK == kThreads * 4, "one float4 of W per thread per k-step");
static_assert((kTileM / kMicro) * (kTileN / kMicro) == kThreads, "one micro-tile per thread");

// gelu_tanh(v) = 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)), u = sqrt(2 / pi) (v + 0.044715 v^3).
// The second form avoids tanhf, which --use_fast_math turns into the approximate tanh.approx.f32.
__device__ __forceinline__ float GeluTanh(float v) {
  const float kAlpha = 0.7978845608028654f;
  const float u = kAlpha * fmaf(0.044715f * v, v * v, v);
  return v / (1.0f + expf(-2.0f * u));
}

// Four consecutive elements row[k .. k+3] of a row of length K; zeros outside the matrix.
__device__ __forceinline__ float4 LoadFour(const float* __restrict__ row, int64_t k, int64_t K,
                                           bool row_ok, bool vec) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (!row_ok) return v;
  if (vec && k + 3 < K) return *reinterpret_cast<const float4*>(row + k);
  if (k < K) v.x = row[k];
  if (k + 1 < K) v.y = row[k + 1];
  if (k + 2 < K) v.z = row[k + 2];
  if (k + 3 < K) v.w = row[k + 3];
  return v;
}

__global__ void __launch_bounds__(kThreads)
    linear_gelu_tiled_kernel(const float* __restrict__ x, const float* __restrict__ w,
                             const float* __restrict__ b, float* __restrict__ y, int64_t M,
                             int64_t K, int64_t N, bool vec_loads, bool vec_stores) {
  __shared__ __align__(16) float xs[kTileK][kTileM + kPad];  // xs[k][m]
  __shared__ __align__(16) float ws[kTileK][kTileN + kPad];  // ws[k][n]

  const int tid = threadIdx.x;
  const int64_t m0 = (int64_t)blockIdx.y * kTileM;
  const int64_t n0 = (int64_t)blockIdx.x * kTileN;

  // The element this thread loads each k-step: row `ld_row` of the tile, k offset `ld_k`.
  const int ld_row = tid / (kTileK / 4);
  const int ld_k = (tid % (kTileK / 4)) * 4;
  const bool x_row_ok = m0 + ld_row < M;
  const bool w_row_ok = n0 + ld_row < N;
  const float* x_row = x + (x_row_ok ? (m0 + ld_row) * K : 0);
  const float* w_row = w + (w_row_ok ? (n0 + ld_row) * K : 0);

  // The micro-tile this thread computes.
  const int tm = (tid / kColThreads) * kMicro;
  const int tn = (tid % kColThreads) * kMicro;

  float acc[kMicro][kMicro];
#pragma unroll
  for (int i = 0; i < kMicro; ++i) {
#pragma unroll
    for (int j = 0; j < kMicro; ++j) acc[i][j] = 0.0f;
  }

  float4 next_x = LoadFour(x_row, ld_k, K, x_row_ok, vec_loads);
  float4 next_w = LoadFour(w_row, ld_k, K, w_row_ok, vec_loads);
  xs[ld_k + 0][ld_row] = next_x.x;
  xs[ld_k + 1][ld_row] = next_x.y;
  xs[ld_k + 2][ld_row] = next_x.z;
  xs[ld_k + 3][ld_row] = next_x.w;
  ws[ld_k + 0][ld_row] = next_w.x;
  ws[ld_k + 1][ld_row] = next_w.y;
  ws[ld_k + 2][ld_row] = next_w.z;
  ws[ld_k + 3][ld_row] = next_w.w;
  __syncthreads();

  for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
    const bool has_next = k0 + kTileK < K;
    if (has_next) {  // in flight while the tile below is multiplied
      next_x = LoadFour(x_row, k0 + kTileK + ld_k, K, x_row_ok, vec_loads);
      next_w = LoadFour(w_row, k0 + kTileK + ld_k, K, w_row_ok, vec_loads);
    }
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
      const float4 a = *reinterpret_cast<const float4*>(&xs[kk][tm]);
      const float4 c = *reinterpret_cast<const float4*>(&ws[kk][tn]);
      const float av[kMicro] = {a.x, a.y, a.z, a.w};
      const float cv[kMicro] = {c.x, c.y, c.z, c.w};
#pragma unroll
      for (int i = 0; i < kMicro; ++i) {
#pragma unroll
        for (int j = 0; j < kMicro; ++j) acc[i][j] = fmaf(av[i], cv[j], acc[i][j]);
      }
    }
    __syncthreads();  // everyone is done reading this tile
    if (has_next) {
      xs[ld_k + 0][ld_row] = next_x.x;
      xs[ld_k + 1][ld_row] = next_x.y;
      xs[ld_k + 2][ld_row] = next_x.z;
      xs[ld_k + 3][ld_row] = next_x.w;
      ws[ld_k + 0][ld_row] = next_w.x;
      ws[ld_k + 1][ld_row] = next_w.y;
      ws[ld_k + 2][ld_row] = next_w.z;
      ws[ld_k + 3][ld_row] = next_w.w;
      __syncthreads();
    }
  }

  // Epilogue: bias + GELU, then one store per element (a float4 per row when possible).
  const int64_t n = n0 + tn;
  float bias[kMicro];
#pragma unroll
  for (int j = 0; j < kMicro; ++j) bias[j] = n + j < N ? b[n + j] : 0.0f;
#pragma unroll
  for (int i = 0; i < kMicro; ++i) {
    const int64_t m = m0 + tm + i;
    if (m >= M) break;
    float out[kMicro];
#pragma unroll
    for (int j = 0; j < kMicro; ++j) out[j] = GeluTanh(acc[i][j] + bias[j]);
    float* yr = y + m * N;
    if (vec_stores && n + 3 < N) {
      *reinterpret_cast<float4*>(yr + n) = make_float4(out[0], out[1], out[2], out[3]);
    } else {
#pragma unroll
      for (int j = 0; j < kMicro; ++j) {
        if (n + j < N) yr[n + j] = out[j];
      }
    }
  }
}

}  // namespace

// vec_loads: K % 4 == 0 and x, W 16-byte aligned; vec_stores: N % 4 == 0 and y 16-byte aligned.
extern "C" cudaError_t linear_gelu_tiled_launcher(const float* x, const float* w, const float* b,
                                                  float* y, int64_t M, int64_t K, int64_t N,
                                                  int vec_loads, int vec_stores, int config,
                                                  cudaStream_t stream) {
  (void)config;
  if (M == 0 || N == 0) return cudaSuccess;
  const int64_t grid_n = (N + kTileN - 1) / kTileN;
  const int64_t grid_m = (M + kTileM - 1) / kTileM;
  if (grid_m > 65535 || grid_n > 0x7fffffffLL) return cudaErrorInvalidValue;
  const dim3 grid((unsigned)grid_n, (unsigned)grid_m);
  linear_gelu_tiled_kernel<<<grid, kThreads, 0, stream>>>(x, w, b, y, M, K, N, vec_loads != 0,
                                                          vec_stores != 0);
  return cudaGetLastError();
}
