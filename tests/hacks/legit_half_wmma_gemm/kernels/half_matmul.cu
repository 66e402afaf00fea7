// C = A @ B for float16 A (M, K), B (K, N), C (M, N), row-major, with fp16 tensor cores
// (nvcuda::wmma, 16 x 16 x 16 fragments) accumulating in fp32, rounded to fp16 once at the end.
// The task is fp16, so fp16 tensor-core math is its own precision, not a downgrade; torch's fp16
// matmul (cuBLAS) does the same.
//
// Block tile 64 x 64, k-step 32, 4 warps in a 2 x 2 grid; each warp owns a 32 x 32 piece of C
// (2 x 2 fragments). The tiles of A and B are staged in shared memory (zero-filled outside the
// matrices, so any M, N, K work); C goes through shared memory too, for the fp32 -> fp16
// conversion and bounds-checked, coalesced stores.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kTileM = 64;
constexpr int kTileN = 64;
constexpr int kTileK = 32;
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kFrag = 16;
constexpr int kWarpTile = 32;  // each warp: 32 x 32 of C
constexpr int kPadH = 8;       // halves: leading dimensions stay multiples of 8 (16 bytes)
constexpr int kPadF = 4;       // floats: leading dimension stays a multiple of 4 (16 bytes)
constexpr int kLdA = kTileK + kPadH;     // 40
constexpr int kLdB = kTileN + kPadH;     // 72
constexpr int kLdC = kWarpTile + kPadF;  // 36
constexpr int kVec = 8;                  // halves per 16-byte load

static_assert((kTileM * kTileK) % (kThreads * kVec) == 0, "A tile in whole 16-byte loads");
static_assert((kTileK * kTileN) % (kThreads * kVec) == 0, "B tile in whole 16-byte loads");

// dst[0 .. 7] = src[0 .. 7] where the column index col + i < cols and the row is inside the matrix,
// 0 elsewhere. One 16-byte load when all eight are inside and the source is aligned (`vec`).
__device__ __forceinline__ void LoadEight(__half* dst, const __half* __restrict__ src, bool row_ok,
                                          int64_t col, int64_t cols, bool vec) {
  if (row_ok && vec && col + kVec <= cols) {
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
    return;
  }
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    dst[i] = (row_ok && col + i < cols) ? src[i] : __float2half(0.0f);
  }
}

__global__ void __launch_bounds__(kThreads)
    half_matmul_wmma_kernel(const __half* __restrict__ A, const __half* __restrict__ B,
                            __half* __restrict__ C, int64_t M, int64_t K, int64_t N,
                            bool vec_a, bool vec_b) {
  // wmma::load/store_matrix_sync need 256-bit aligned pointers: every fragment offset below is a
  // multiple of 32 bytes given these leading dimensions.
  __shared__ __align__(32) __half As[kTileM][kLdA];
  __shared__ __align__(32) __half Bs[kTileK][kLdB];
  __shared__ __align__(32) float Cs[kWarps][kWarpTile][kLdC];

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int warp_m = warp / 2;  // 0..1
  const int warp_n = warp % 2;  // 0..1
  const int64_t m0 = (int64_t)blockIdx.y * kTileM;
  const int64_t n0 = (int64_t)blockIdx.x * kTileN;

  wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  }

  for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
    // A tile: 64 rows x 32 columns = 256 chunks of 8 halves, 2 per thread.
#pragma unroll
    for (int r = 0; r < (kTileM * kTileK) / (kThreads * kVec); ++r) {
      const int chunk = tid + r * kThreads;
      const int row = chunk / (kTileK / kVec);
      const int col = (chunk % (kTileK / kVec)) * kVec;
      const int64_t gm = m0 + row;
      const int64_t gk = k0 + col;
      const bool row_ok = gm < M;
      LoadEight(&As[row][col], A + (row_ok ? gm * K + gk : 0), row_ok, gk, K, vec_a);
    }
    // B tile: 32 rows x 64 columns = 256 chunks of 8 halves, 2 per thread.
#pragma unroll
    for (int r = 0; r < (kTileK * kTileN) / (kThreads * kVec); ++r) {
      const int chunk = tid + r * kThreads;
      const int row = chunk / (kTileN / kVec);
      const int col = (chunk % (kTileN / kVec)) * kVec;
      const int64_t gk = k0 + row;
      const int64_t gn = n0 + col;
      const bool row_ok = gk < K;
      LoadEight(&Bs[row][col], B + (row_ok ? gk * N + gn : 0), row_ok, gn, N, vec_b);
    }
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < kTileK; kk += kFrag) {
      wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, __half, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, __half, wmma::row_major> b[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        wmma::load_matrix_sync(a[i], &As[warp_m * kWarpTile + i * kFrag][kk], kLdA);
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        wmma::load_matrix_sync(b[j], &Bs[kk][warp_n * kWarpTile + j * kFrag], kLdB);
      }
#pragma unroll
      for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
      }
    }
    __syncthreads();  // the tiles are overwritten next k-step
  }

  // fp32 accumulators -> this warp's shared staging area -> fp16, bounds-checked stores.
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(&Cs[warp][i * kFrag][j * kFrag], acc[i][j], kLdC,
                              wmma::mem_row_major);
    }
  }
  __syncwarp();
  const int64_t row0 = m0 + warp_m * kWarpTile;
  const int64_t col = n0 + warp_n * kWarpTile + lane;
  for (int r = 0; r < kWarpTile; ++r) {
    const int64_t row = row0 + r;
    if (row < M && col < N) C[row * N + col] = __float2half(Cs[warp][r][lane]);
  }
}

}  // namespace

// vec_a: K % 8 == 0 and A 16-byte aligned; vec_b: N % 8 == 0 and B 16-byte aligned.
extern "C" cudaError_t half_matmul_wmma_launcher(const void* A, const void* B, void* C, int64_t M,
                                                 int64_t K, int64_t N, int vec_a, int vec_b,
                                                 int config, cudaStream_t stream) {
  (void)config;
  if (M == 0 || N == 0) return cudaSuccess;
  const int64_t grid_n = (N + kTileN - 1) / kTileN;
  const int64_t grid_m = (M + kTileM - 1) / kTileM;
  if (grid_m > 65535 || grid_n > 0x7fffffffLL) return cudaErrorInvalidValue;
  if (K == 0) return cudaMemsetAsync(C, 0, (size_t)(M * N) * sizeof(__half), stream);
  const dim3 grid((unsigned)grid_n, (unsigned)grid_m);
  half_matmul_wmma_kernel<<<grid, kThreads, 0, stream>>>(
      static_cast<const __half*>(A), static_cast<const __half*>(B), static_cast<__half*>(C), M, K, N,
      vec_a != 0, vec_b != 0);
  return cudaGetLastError();
}
