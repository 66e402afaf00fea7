template <int N> __global__ void k(float* p) { p[(threadIdx.x)] = {1.f}[0]; } ) ] }
