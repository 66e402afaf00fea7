#include <cuda_runtime.h>
#include "kernels/common.cuh"
#include_next <x.h>
#include MACRO_HEADER
%:include <y.h>
