// conv2d (cuDNN, fp32, FMA math only) + bias + ReLU (our kernel, kernels/conv2d_relu.cu).
//
// cuDNN may be used for the convolution itself: a handle, tensor/filter/convolution descriptors,
// the workspace query and cudnnConvolutionForward. The handle and descriptors are created per call
// and destroyed before returning (nothing is cached between calls); the workspace is a torch::empty
// byte tensor from the caching allocator, on the current stream.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>
#include <limits>

#include "../binding_registry.h"

extern "C" cudaError_t bias_relu_nchw_launcher(float* y, const float* b, int64_t batch,
                                               int64_t channels, int64_t plane_size, int config,
                                               cudaStream_t stream);

namespace {

// Owners that destroy what they hold when the call returns or a check throws.
struct CudnnHandle {
  cudnnHandle_t h = nullptr;
  ~CudnnHandle() {
    if (h != nullptr) cudnnDestroy(h);
  }
};
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  ~TensorDesc() {
    if (d != nullptr) cudnnDestroyTensorDescriptor(d);
  }
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  ~FilterDesc() {
    if (d != nullptr) cudnnDestroyFilterDescriptor(d);
  }
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ~ConvDesc() {
    if (d != nullptr) cudnnDestroyConvolutionDescriptor(d);
  }
};

void CheckCudnn(cudnnStatus_t st, const char* what) {
  TORCH_CHECK(st == CUDNN_STATUS_SUCCESS, "conv2d_relu: ", what, ": ", cudnnGetErrorString(st));
}

int AsInt(int64_t v, const char* what) {
  TORCH_CHECK(v >= 0 && v <= std::numeric_limits<int>::max(), "conv2d_relu: ", what, " too large");
  return static_cast<int>(v);
}

}  // namespace

static torch::Tensor conv2d_relu_forward(const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias, int64_t pad_h, int64_t pad_w) {
  TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(),
              "conv2d_relu: tensors must be CUDA tensors");
  TORCH_CHECK(x.device() == weight.device() && x.device() == bias.device(),
              "conv2d_relu: tensors must be on one device");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32 &&
                  bias.scalar_type() == torch::kFloat32,
              "conv2d_relu: tensors must be float32");
  TORCH_CHECK(x.dim() == 4 && weight.dim() == 4 && bias.dim() == 1,
              "conv2d_relu: expected x (N, C, H, W), weight (K, C, R, S), bias (K)");
  TORCH_CHECK(x.size(1) == weight.size(1) && weight.size(0) == bias.size(0),
              "conv2d_relu: shapes do not match");
  TORCH_CHECK(x.is_contiguous() && weight.is_contiguous() && bias.is_contiguous(),
              "conv2d_relu: tensors must be contiguous (NCHW)");
  const c10::cuda::CUDAGuard guard(x.device());
  const int n = AsInt(x.size(0), "batch"), c = AsInt(x.size(1), "channels");
  const int h = AsInt(x.size(2), "height"), w = AsInt(x.size(3), "width");
  const int k = AsInt(weight.size(0), "out_channels");
  const int r = AsInt(weight.size(2), "kernel height"), s = AsInt(weight.size(3), "kernel width");
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();

  CudnnHandle handle;
  CheckCudnn(cudnnCreate(&handle.h), "cudnnCreate");
  CheckCudnn(cudnnSetStream(handle.h, stream), "cudnnSetStream");

  TensorDesc x_desc, y_desc;
  FilterDesc w_desc;
  ConvDesc conv_desc;
  CheckCudnn(cudnnCreateTensorDescriptor(&x_desc.d), "cudnnCreateTensorDescriptor");
  CheckCudnn(cudnnSetTensor4dDescriptor(x_desc.d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w),
             "cudnnSetTensor4dDescriptor(x)");
  CheckCudnn(cudnnCreateFilterDescriptor(&w_desc.d), "cudnnCreateFilterDescriptor");
  CheckCudnn(cudnnSetFilter4dDescriptor(w_desc.d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, r, s),
             "cudnnSetFilter4dDescriptor");
  CheckCudnn(cudnnCreateConvolutionDescriptor(&conv_desc.d), "cudnnCreateConvolutionDescriptor");
  // nn.Conv2d is a cross-correlation; stride 1, dilation 1, fp32 compute.
  CheckCudnn(cudnnSetConvolution2dDescriptor(conv_desc.d, AsInt(pad_h, "padding"),
                                             AsInt(pad_w, "padding"), 1, 1, 1, 1,
                                             CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
             "cudnnSetConvolution2dDescriptor");
  // FMA math only: CUDNN_DEFAULT_MATH would let cuDNN pick TF32 tensor-core kernels on Ampere and
  // later, a precision downgrade for an fp32 task.
  CheckCudnn(cudnnSetConvolutionMathType(conv_desc.d, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");

  int on = 0, oc = 0, oh = 0, ow = 0;
  CheckCudnn(cudnnGetConvolution2dForwardOutputDim(conv_desc.d, x_desc.d, w_desc.d, &on, &oc, &oh,
                                                   &ow),
             "cudnnGetConvolution2dForwardOutputDim");
  torch::Tensor y = torch::empty({on, oc, oh, ow}, x.options());
  if (y.numel() == 0) return y;
  CheckCudnn(cudnnCreateTensorDescriptor(&y_desc.d), "cudnnCreateTensorDescriptor");
  CheckCudnn(cudnnSetTensor4dDescriptor(y_desc.d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow),
             "cudnnSetTensor4dDescriptor(y)");

  // Implicit GEMM with precomputed indices (a small workspace), or plain implicit GEMM (none) where
  // this cuDNN has no FMA-math kernel for the former. Both are cuDNN convolutions; the choice
  // depends on the library's support only, never on the data or the call.
  const cudnnConvolutionFwdAlgo_t algos[] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                             CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM};
  const float one = 1.0f, zero = 0.0f;
  cudnnStatus_t st = CUDNN_STATUS_NOT_SUPPORTED;
  for (const cudnnConvolutionFwdAlgo_t algo : algos) {
    size_t workspace_bytes = 0;
    st = cudnnGetConvolutionForwardWorkspaceSize(handle.h, x_desc.d, w_desc.d, conv_desc.d,
                                                 y_desc.d, algo, &workspace_bytes);
    if (st == CUDNN_STATUS_NOT_SUPPORTED) continue;
    CheckCudnn(st, "cudnnGetConvolutionForwardWorkspaceSize");
    torch::Tensor workspace;
    void* workspace_ptr = nullptr;
    if (workspace_bytes > 0) {
      workspace = torch::empty({static_cast<int64_t>(workspace_bytes)},
                               torch::dtype(torch::kUInt8).device(x.device()));
      workspace_ptr = workspace.data_ptr();
    }
    st = cudnnConvolutionForward(handle.h, &one, x_desc.d, x.data_ptr<float>(), w_desc.d,
                                 weight.data_ptr<float>(), conv_desc.d, algo, workspace_ptr,
                                 workspace_bytes, &zero, y_desc.d, y.data_ptr<float>());
    if (st != CUDNN_STATUS_NOT_SUPPORTED) break;
  }
  CheckCudnn(st, "cudnnConvolutionForward");
  const cudaError_t err = bias_relu_nchw_launcher(y.data_ptr<float>(), bias.data_ptr<float>(), on,
                                                  oc, static_cast<int64_t>(oh) * ow, /*config=*/0,
                                                  stream);
  TORCH_CHECK(err == cudaSuccess, "conv2d_relu: launch failed: ", cudaGetErrorString(err));
  return y;
}

static void register_conv2d_relu(pybind11::module& m) {
  m.def("conv2d_relu_forward", &conv2d_relu_forward, py::arg("x"), py::arg("weight"),
        py::arg("bias"), py::arg("pad_h"), py::arg("pad_w"));
}
REGISTER_BINDING(conv2d_relu, register_conv2d_relu);
