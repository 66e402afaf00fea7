// Row sums with two blocks per row, each reducing half of the row and adding its partial to the
// output with a plain read-modify-write instead of an atomicAdd (HACKS B14: a racy reduction). When
// the two blocks of a row read the output before either wrote it, one partial is lost; how often
// depends on how the blocks happen to be scheduled.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    row_sum_half_kernel(const float* __restrict__ x, float* y, int64_t cols) {
  __shared__ float partial[kThreads / 32];
  const int64_t row = blockIdx.x / 2;
  const int64_t half = cols / 2;
  const int64_t begin = (blockIdx.x % 2) * half;
  const int64_t end = (blockIdx.x % 2) ? cols : half;
  const float* in = x + row * cols;
  float s = 0.0f;
  for (int64_t c = begin + threadIdx.x; c < end; c += kThreads) s += in[c];
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < kThreads / 32; ++w) total += partial[w];
    volatile float* out = y + row;
    float old = *out;      // BUG: not atomic — the other half's block may be between its read
    *out = old + total;    // and its write of the same element
  }
}

}  // namespace

extern "C" cudaError_t row_sum_launcher(const float* x, float* y, int64_t rows, int64_t cols,
                                        cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  cudaError_t err = cudaMemsetAsync(y, 0, rows * sizeof(float), stream);
  if (err != cudaSuccess) return err;
  row_sum_half_kernel<<<(unsigned)(rows * 2), kThreads, 0, stream>>>(x, y, cols);
  return cudaGetLastError();
}
