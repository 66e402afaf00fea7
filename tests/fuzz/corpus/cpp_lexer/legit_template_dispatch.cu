// y = relu(x) * scale for float32 and float64 tensors: one kernel template, instantiated for both
// types behind two extern "C" launchers; the binding switches on the tensor's dtype. The branch
// depends only on the dtype (metadata), never on a call count, a clock or the data.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    relu_scale_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n, T scale) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const T v = x[i];
    y[i] = (v <= T(0) ? T(0) : v) * scale;
  }
}

template <typename T>
cudaError_t LaunchReluScale(const T* x, T* y, int64_t n, T scale, int config, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const int threads = kThreads;
  int64_t blocks = (n + threads - 1) / threads;
  const int64_t cap = config > 0 ? config : 65535;
  if (blocks > cap) blocks = cap;
  relu_scale_kernel<T><<<(unsigned)blocks, threads, 0, stream>>>(x, y, n, scale);
  return cudaGetLastError();
}

}  // namespace

// The scale is rounded to the tensor's dtype, as torch does for `tensor * python_float`.
extern "C" cudaError_t relu_scale_f32_launcher(const float* x, float* y, int64_t n, double scale,
                                               int config, cudaStream_t stream) {
  return LaunchReluScale<float>(x, y, n, static_cast<float>(scale), config, stream);
}

extern "C" cudaError_t relu_scale_f64_launcher(const double* x, double* y, int64_t n, double scale,
                                               int config, cudaStream_t stream) {
  return LaunchReluScale<double>(x, y, n, scale, config, stream);
}
