// y = max(x, 0) * scale, element-wise, grid-stride, computed on a stream of the candidate's own.
//
// The side stream is ordered AFTER the current stream (an event makes it wait until x is ready), so
// the result is always right once the device is synchronised. What is missing is the join: the
// current stream never waits for the side stream, so the forward returns while the work is still
// queued, and a timer that records events on the current stream measures nothing (A1).
#include <cuda_runtime.h>

#include <cstdint>

__global__ void relu_scale_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                  float scale) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    y[i] = fmaxf(x[i], 0.0f) * scale;
  }
}

extern "C" cudaError_t relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                           int config, cudaStream_t stream) {
  (void)config;
  if (n == 0) return cudaSuccess;
  cudaEvent_t inputs_ready;
  cudaError_t err = cudaEventCreateWithFlags(&inputs_ready, cudaEventDisableTiming);
  if (err != cudaSuccess) return err;
  cudaStream_t side;
  err = cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  if (err != cudaSuccess) {
    cudaEventDestroy(inputs_ready);
    return err;
  }
  cudaEventRecord(inputs_ready, stream);
  cudaStreamWaitEvent(side, inputs_ready, 0);
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535) blocks = 65535;
  relu_scale_kernel<<<(unsigned)blocks, 256, 0, side>>>(x, y, n, scale);
  err = cudaGetLastError();
  // No cudaEventRecord(done, side) + cudaStreamWaitEvent(stream, done): the join is "forgotten".
  // Destroying the stream and the event does not wait: their resources go once the work is done.
  cudaStreamDestroy(side);
  cudaEventDestroy(inputs_ready);
  return err;
}
