// Softmax over each row of a (rows, cols) float32 matrix, one block of 256 threads per row, with
// block-wide reductions through shared memory: each warp reduces its values with shuffles and writes
// one partial to a shared slot, then warp 0 reduces the slots.
//
// The bug (B12, undefined behaviour that passes by luck): the second step is written for the
// largest block (32 warps) and has every lane of warp 0 read its slot, but only 8 warps exist, so
// slots 8..31 of both tables are read without ever being written. Shared memory is not cleared
// between kernels: those slots hold whatever an earlier kernel left on that SM. When they happen to
// hold zeros (or small values) the result is right: the maximum is unchanged (the row maximum is
// positive) and the sum gains nothing. Garbage there changes the sum (a wrong scale) or, for a
// NaN, poisons it.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kMaxWarps = 32;  // "works for any block size up to 1024"
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// Block-wide reduction of `v`; every thread gets the result. `slots` has kMaxWarps entries.
template <bool kIsMax>
__device__ float block_reduce(float v, float* slots, float* result) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  v = kIsMax ? warp_max(v) : warp_sum(v);
  if (lane == 0) slots[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = slots[lane];  // BUG: should be lane < blockDim.x / 32 ? slots[lane] : identity
    w = kIsMax ? warp_max(w) : warp_sum(w);
    if (lane == 0) *result = w;
  }
  __syncthreads();
  return *result;
}

__global__ void __launch_bounds__(kThreads)
    rowwise_softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
  __shared__ float max_slots[kMaxWarps];
  __shared__ float sum_slots[kMaxWarps];
  __shared__ float results[2];
  const float* in = x + (int64_t)blockIdx.x * cols;
  float* out = y + (int64_t)blockIdx.x * cols;

  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) m = fmaxf(m, in[c]);
  m = block_reduce<true>(m, max_slots, &results[0]);

  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) s += __expf(in[c] - m);
  s = block_reduce<false>(s, sum_slots, &results[1]);

  const float inv = 1.0f / s;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) out[c] = __expf(in[c] - m) * inv;
}

}  // namespace

extern "C" cudaError_t rowwise_softmax_launcher(const float* x, float* y, int64_t rows,
                                                int64_t cols, int config, cudaStream_t stream) {
  (void)config;
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows > 2147483647) return cudaErrorInvalidValue;
  rowwise_softmax_kernel<<<(unsigned)rows, kThreads, 0, stream>>>(x, y, cols);
  return cudaGetLastError();
}
