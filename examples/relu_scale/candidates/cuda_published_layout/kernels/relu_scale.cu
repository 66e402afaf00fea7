// relu(x) * scale in the published workspace style: raw pointers, a config
// switch choosing the variant, and the caller's stream.
#include <cuda_runtime.h>

#include <cstdint>

__global__ void relu_scale_kernel(const float* __restrict__ x, float* __restrict__ y,
                                  float scale, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.0f) * scale;
}

__global__ void relu_scale_kernel_vec4(const float* __restrict__ x, float* __restrict__ y,
                                       float scale, int64_t n) {
  int64_t base = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) * 4;
  if (base + 3 < n) {
    float4 v = *reinterpret_cast<const float4*>(x + base);
    v.x = fmaxf(v.x, 0.0f) * scale;
    v.y = fmaxf(v.y, 0.0f) * scale;
    v.z = fmaxf(v.z, 0.0f) * scale;
    v.w = fmaxf(v.w, 0.0f) * scale;
    *reinterpret_cast<float4*>(y + base) = v;
  } else {
    for (int64_t i = base; i < n; ++i) y[i] = fmaxf(x[i], 0.0f) * scale;
  }
}

extern "C" void relu_scale_launcher(const float* x, float* y, float scale, int64_t n, int config,
                                    cudaStream_t stream) {
  bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0;
  switch (config) {
    case 1: {
      const int threads = 256;
      int64_t blocks = (n + threads - 1) / threads;
      relu_scale_kernel<<<(unsigned)blocks, threads, 0, stream>>>(x, y, scale, n);
      break;
    }
    default: {
      if (!aligned) {
        relu_scale_launcher(x, y, scale, n, 1, stream);
        return;
      }
      const int threads = 256;
      int64_t blocks = ((n + 3) / 4 + threads - 1) / threads;
      relu_scale_kernel_vec4<<<(unsigned)blocks, threads, 0, stream>>>(x, y, scale, n);
      break;
    }
  }
}
