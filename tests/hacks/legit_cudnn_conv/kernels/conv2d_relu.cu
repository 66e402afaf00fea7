// The part of conv2d + bias + ReLU that is ours: y[n, c, :, :] = relu(y[n, c, :, :] + b[c]), in place
// on the convolution's output (cuDNN computes the convolution without bias in the binding).
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;

// torch.relu keeps NaN (a comparison with NaN is false) and maps everything <= 0 to 0.
__device__ __forceinline__ float Relu(float v) { return v <= 0.0f ? 0.0f : v; }

// One (n, c) plane per blockIdx.y, its H * W pixels over blockIdx.x * blockDim.x threads: the bias
// is one value per block, reads and writes are coalesced.
__global__ void __launch_bounds__(kThreads)
    bias_relu_kernel(float* __restrict__ y, const float* __restrict__ b, int64_t planes,
                     int64_t channels, int64_t plane_size) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t p = blockIdx.y; p < planes; p += gridDim.y) {
    const float bias = b[p % channels];
    float* yp = y + p * plane_size;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < plane_size; i += stride) {
      yp[i] = Relu(yp[i] + bias);
    }
  }
}

}  // namespace

extern "C" cudaError_t bias_relu_nchw_launcher(float* y, const float* b, int64_t batch,
                                               int64_t channels, int64_t plane_size, int config,
                                               cudaStream_t stream) {
  (void)config;
  const int64_t planes = batch * channels;
  if (planes == 0 || plane_size == 0) return cudaSuccess;
  int64_t blocks_x = (plane_size + kThreads - 1) / kThreads;
  if (blocks_x > 1024) blocks_x = 1024;
  const int64_t blocks_y = planes < 65535 ? planes : 65535;
  bias_relu_kernel<<<dim3((unsigned)blocks_x, (unsigned)blocks_y), kThreads, 0, stream>>>(
      y, b, planes, channels, plane_size);
  return cudaGetLastError();
}
