// y[r] = sum_c x[r, c] for a (rows, cols) float32 tensor. Each row is split over several blocks
// (grid.x rows, grid.y chunks per row); each block reduces its chunk (warp shuffles, then the
// warps' partial sums in shared memory) and adds it to y[r] with one float atomicAdd. y is zeroed
// first with cudaMemsetAsync on the same stream.
//
// The order in which the blocks' atomics land varies from run to run, so the last bits of y may
// differ between runs (float addition is not associative). That is ordinary floating-point
// non-determinism, well inside the tolerance, not undefined behaviour.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;

__global__ void __launch_bounds__(kThreads)
    row_sum_atomic_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols,
                          int64_t chunk) {
  __shared__ float warp_sums[kWarps];
  const int64_t row = blockIdx.x;
  const int64_t begin = (int64_t)blockIdx.y * chunk;
  int64_t end = begin + chunk;
  if (end > cols) end = cols;
  const float* xr = x + row * cols;

  float s = 0.0f;
  for (int64_t c = begin + threadIdx.x; c < end; c += kThreads) s += xr[c];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(kFullMask, s, offset);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) warp_sums[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < kWarps ? warp_sums[lane] : 0.0f;
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(kFullMask, s, offset);
    if (lane == 0) atomicAdd(y + row, s);
  }
}

}  // namespace

// config: chunks per row (0 = 4).
extern "C" cudaError_t row_sum_atomic_launcher(const float* x, float* y, int64_t rows,
                                               int64_t cols, int config, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  cudaError_t err = cudaMemsetAsync(y, 0, (size_t)rows * sizeof(float), stream);
  if (err != cudaSuccess || cols == 0) return err;
  if (rows > 0x7fffffffLL) return cudaErrorInvalidValue;  // rows go on grid.x
  int64_t chunks = config > 0 ? config : 4;
  if (chunks > 65535) chunks = 65535;  // chunks go on grid.y
  if (chunks > cols) chunks = cols;
  const int64_t chunk = (cols + chunks - 1) / chunks;
  chunks = (cols + chunk - 1) / chunk;  // no empty chunk at the end
  const dim3 grid((unsigned)rows, (unsigned)chunks);
  row_sum_atomic_kernel<<<grid, kThreads, 0, stream>>>(x, y, cols, chunk);
  return cudaGetLastError();
}
