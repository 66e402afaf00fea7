#include <cuda_runtime.h>
#include <thrust/execution_policy.h>
#include <thrust/transform.h>

#include <cstdint>

struct ReluScale {
  float scale;
  __host__ __device__ float operator()(float v) const { return (v > 0.0f ? v : 0.0f) * scale; }
};

extern "C" cudaError_t relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                           int config, cudaStream_t stream) {
  (void)config;
  thrust::transform(thrust::cuda::par.on(stream), x, x + n, y, ReluScale{scale});
  return cudaGetLastError();
}
