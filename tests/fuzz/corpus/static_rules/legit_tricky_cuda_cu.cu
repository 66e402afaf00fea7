// y = max(x, 0) * scale on the GPU. Legitimate code that looks like what the static rules look for:
// templates, static device helpers, __restrict__, #pragma unroll, cooperative groups, a
// __constant__ table, shared memory, and a const global.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cg = cooperative_groups;

namespace {

constexpr int kThreads = 256;
constexpr int kVec = 4;
__device__ const float kZero = 0.0f;
__constant__ float kOne[1] = {1.0f};

static __device__ __forceinline__ float ReluScale(float v, float scale) {
  return fmaxf(v, kZero) * (scale * kOne[0]);
}

template <int VEC>
__global__ void __launch_bounds__(kThreads)
    relu_scale_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, float scale) {
  __shared__ float tile[kThreads * VEC];
  cg::thread_block block = cg::this_thread_block();
  const int64_t tile_start = (int64_t)blockIdx.x * kThreads * VEC;
  const int64_t stride = (int64_t)gridDim.x * kThreads * VEC;
  for (int64_t base = tile_start; base < n; base += stride) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const int64_t i = base + k * kThreads + threadIdx.x;
      tile[k * kThreads + threadIdx.x] = i < n ? x[i] : 0.0f;
    }
    block.sync();
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const int64_t i = base + k * kThreads + threadIdx.x;
      if (i < n) y[i] = ReluScale(tile[k * kThreads + threadIdx.x], scale);
    }
    block.sync();
  }
}

static unsigned GridFor(int64_t n) {
  int64_t blocks = (n + kThreads * kVec - 1) / (kThreads * kVec);
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

}  // namespace

extern "C" cudaError_t relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                           int config, cudaStream_t stream) {
  (void)config;
  if (n == 0) return cudaSuccess;
  relu_scale_kernel<kVec><<<GridFor(n), kThreads, 0, stream>>>(x, y, n, scale);
  return cudaGetLastError();
}
