// y = relu(x) * scale, vectorised: 16-byte float4 loads and stores over the aligned body of the
// tensor, a scalar loop for the last n % 4 elements, and a grid-stride loop sized to the GPU (a few
// blocks per SM) instead of one thread per element. Fast because it moves few, wide transactions,
// not because it skips work: every element is read and written on every call.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;

// torch.relu keeps NaN (a comparison with NaN is false) and maps everything <= 0 to 0.
__device__ __forceinline__ float ReluScale(float v, float scale) {
  return (v <= 0.0f ? 0.0f : v) * scale;
}

__global__ void __launch_bounds__(kThreads)
    relu_scale_vec4_kernel(const float4* __restrict__ x4, float4* __restrict__ y4, int64_t n4,
                           const float* __restrict__ x, float* __restrict__ y, int64_t n,
                           float scale) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < n4; i += stride) {
    float4 v = x4[i];
    v.x = ReluScale(v.x, scale);
    v.y = ReluScale(v.y, scale);
    v.z = ReluScale(v.z, scale);
    v.w = ReluScale(v.w, scale);
    y4[i] = v;
  }
  // The tail that does not fill a float4 (n % 4 elements), one element per thread.
  for (int64_t i = n4 * 4 + first; i < n; i += stride) y[i] = ReluScale(x[i], scale);
}

}  // namespace

// config: blocks per SM (0 = 4). `aligned` says whether x and y are 16-byte aligned; when they are
// not, the whole tensor goes through the scalar tail loop.
extern "C" cudaError_t relu_scale_vec4_launcher(const float* x, float* y, int64_t n, float scale,
                                                int sm_count, int aligned, int config,
                                                cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const int64_t n4 = aligned ? n / 4 : 0;
  const int per_sm = config > 0 ? config : 4;
  const int64_t work = n4 > 0 ? n4 : n;
  int64_t blocks = (work + kThreads - 1) / kThreads;
  const int64_t cap = (int64_t)(sm_count > 0 ? sm_count : 1) * per_sm * (2048 / kThreads);
  if (blocks > cap) blocks = cap;
  if (blocks < 1) blocks = 1;
  relu_scale_vec4_kernel<<<(unsigned)blocks, kThreads, 0, stream>>>(
      reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4, x, y, n, scale);
  return cudaGetLastError();
}
