// Row-wise softmax, one block per row, with cub::BlockReduce for the row max and the row sum.
// cub's block primitives are building blocks inside our own kernel (they launch nothing); only
// cub::Device* algorithms, which launch library kernels, are off limits.
#include <cub/block/block_reduce.cuh>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

// cub::Max is gone from recent CCCL releases; a functor of our own works with every version.
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

__global__ void __launch_bounds__(kThreads)
    softmax_row_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
  using BlockReduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename BlockReduce::TempStorage max_storage;
  __shared__ typename BlockReduce::TempStorage sum_storage;
  __shared__ float row_max;
  __shared__ float row_sum;

  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  float* yr = y + row * cols;

  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) m = fmaxf(m, xr[c]);
  m = BlockReduce(max_storage).Reduce(m, MaxOp());  // valid in thread 0
  if (threadIdx.x == 0) row_max = m;
  __syncthreads();
  m = row_max;

  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) s += expf(xr[c] - m);
  s = BlockReduce(sum_storage).Sum(s);  // valid in thread 0
  if (threadIdx.x == 0) row_sum = s;
  __syncthreads();
  s = row_sum;

  for (int64_t c = threadIdx.x; c < cols; c += kThreads) yr[c] = expf(xr[c] - m) / s;
}

}  // namespace

extern "C" cudaError_t rowwise_softmax_cub_launcher(const float* x, float* y, int64_t rows,
                                                    int64_t cols, int config,
                                                    cudaStream_t stream) {
  (void)config;
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows > 0x7fffffffLL) return cudaErrorInvalidValue;  // one block per row, grid.x <= 2^31 - 1
  softmax_row_kernel<<<(unsigned)rows, kThreads, 0, stream>>>(x, y, cols);
  return cudaGetLastError();
}
