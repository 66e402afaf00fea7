// A plain binding: no torch headers (plain_binding.h), so an edit of this file compiles in a
// fraction of a second.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "../plain_binding.h"

extern "C" cudaError_t relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                           int config, cudaStream_t stream);

static plain::Tensor relu_scale_forward(const plain::Tensor& x, double scale) {
  PLAIN_CHECK(x.is_cuda(), "relu_scale: x must be a CUDA tensor");
  PLAIN_CHECK(x.dtype == plain::kFloat32, "relu_scale: x must be float32");
  PLAIN_CHECK(x.is_contiguous(), "relu_scale: x must be contiguous");
  plain::Tensor y = plain::empty_like(x);
  cudaStream_t stream = static_cast<cudaStream_t>(plain::current_stream(x.device));
  cudaError_t err = relu_scale_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(),
                                        static_cast<float>(scale), /*config=*/0, stream);
  PLAIN_CHECK(err == cudaSuccess, std::string("relu_scale: launch failed: ") + cudaGetErrorString(err));
  return y;
}
PLAIN_EXPORT(relu_scale_forward, "x", "scale");
