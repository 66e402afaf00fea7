// torch_names.cc — the torch/ATen names the rules know: the ATen compute methods of
// torch.Tensor, the metadata and view methods allowed on a tensor, the torch/at/c10 API allowed in
// C++ (torch_compute); and torch_namespace_alias, which keeps the torch:: prefix the scan relies
// on in sight.
#include <cctype>

#include "judge/static/source_scan.h"

namespace cuda_agent {

// ATen compute methods of torch.Tensor (torch 2.x), without metadata, views and the names in
// kCommonMethodNames; generated from dir(torch.Tensor) as docs/static-rules.md describes.
const std::unordered_set<std::string>& AtenComputeMethods() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      "abs_ absolute absolute_ acos acos_ acosh acosh_ add_ addbmm addbmm_ addcdiv addcdiv_ "
      "addcmul "
      "addcmul_ addmm addmm_ addmv addmv_ addr addr_ adjoint allclose amax amin aminmax angle "
      "apply_ arccos arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_ arctan arctan2 "
      "arctan2_ arctan_ arctanh arctanh_ argmax argmin argsort argwhere as_strided as_strided_ "
      "as_strided_scatter as_subclass asin asin_ asinh asinh_ atan atan2 atan2_ atan_ atanh atanh_ "
      "backward baddbmm baddbmm_ bernoulli bernoulli_ bfloat16 bincount bitwise_and bitwise_and_ "
      "bitwise_left_shift bitwise_left_shift_ bitwise_not bitwise_not_ bitwise_or bitwise_or_ "
      "bitwise_right_shift bitwise_right_shift_ bitwise_xor bitwise_xor_ bmm broadcast_to byte "
      "cauchy_ ccol_indices cdouble ceil_ cfloat chalf cholesky cholesky_inverse cholesky_solve "
      "clamp clamp_ clamp_max clamp_max_ clamp_min clamp_min_ clip clip_ clone coalesce "
      "col_indices "
      "conj conj_physical conj_physical_ copy_ copysign copysign_ corrcoef cos_ cosh "
      "cosh_ count_nonzero cov cpu crow_indices cuda cummax cummin cumprod cumprod_ cumsum cumsum_ "
      "deg2rad deg2rad_ dense_dim dequantize det detach_ diag diag_embed diagflat diagonal_scatter "
      "diff digamma digamma_ dim_order dist div_ divide divide_ dsplit eig eq eq_ equal erf erf_ "
      "erfc erfc_ erfinv erfinv_ exp2 exp2_ exp_ expand expand_as expm1 expm1_ exponential_ fill_ "
      "fill_diagonal_ fix fix_ flatten flip fliplr flipud float_power float_power_ floor_ "
      "floor_divide floor_divide_ fmax fmin fmod_ frac frac_ frexp gather gcd gcd_ ge ge_ "
      "geometric_ geqrf ger greater greater_ greater_equal greater_equal_ gt gt_ half hardshrink "
      "hash_tensor heaviside heaviside_ histc histogram hsplit hypot hypot_ i0 i0_ igamma igamma_ "
      "igammac igammac_ index_add index_add_ index_copy index_copy_ index_fill index_fill_ "
      "index_put index_put_ index_reduce index_reduce_ index_select indices inner int_repr inverse "
      "ipu isclose isfinite isinf isnan isneginf isposinf isreal istft item kron kthvalue lcm lcm_ "
      "ldexp ldexp_ le le_ lerp lerp_ less less_ less_equal less_equal_ lgamma lgamma_ log10 "
      "log10_ "
      "log1p log1p_ log2 log2_ log_ log_normal_ log_softmax logaddexp logaddexp2 logcumsumexp "
      "logdet logical_and logical_and_ logical_not logical_not_ logical_or logical_or_ logical_xor "
      "logical_xor_ logit logit_ logsumexp lstsq lt lt_ lu lu_solve map2_ map_ masked_fill "
      "masked_fill_ masked_scatter masked_scatter_ masked_select matmul matrix_exp matrix_power "
      "maximum median minimum mm mode module_load msort mtia mul_ multinomial multiply multiply_ "
      "mv "
      "mvlgamma mvlgamma_ nan_to_num nan_to_num_ nanmean nanmedian nanquantile nansum narrow_copy "
      "ne ne_ neg_ negative negative_ new_tensor nextafter nextafter_ "
      "nonzero nonzero_static normal_ not_equal not_equal_ numpy orgqr ormqr outer pin_memory "
      "pinverse polygamma polygamma_ positive pow_ prelu put_ q_per_channel_axis "
      "q_per_channel_scales q_per_channel_zero_points q_scale q_zero_point qr qscheme quantile "
      "rad2deg rad2deg_ random_ ravel reciprocal reciprocal_ record_stream register_hook "
      "register_post_accumulate_grad_hook reinforce relu relu_ remainder remainder_ renorm renorm_ "
      "repeat repeat_interleave requires_grad_ reshape reshape_as resize_ resize_as resize_as_ "
      "resize_as_sparse_ resolve_conj resolve_neg retain_grad roll rot90 round_ row_indices rsqrt_ "
      "scatter scatter_ scatter_add scatter_add_ scatter_reduce scatter_reduce_ select_scatter "
      "set_ "
      "sgn sgn_ share_memory_ sigmoid sigmoid_ sign_ signbit sin_ sinc sinc_ sinh sinh_ "
      "slice_inverse slice_scatter slogdet smm softmax solve sparse_dim sparse_mask sparse_resize_ "
      "sparse_resize_and_clear_ sqrt_ square square_ squeeze_ sspaddmm std stft storage "
      "storage_type sub_ subtract subtract_ sum_to_size svd swapaxes_ swapdims_ symeig t_ take "
      "take_along_dim tan_ tanh_ tile to to_dense to_mkldnn to_padded_tensor to_sparse "
      "to_sparse_bsc to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr tolist topk trace "
      "transpose_ triangular_solve tril tril_ triu triu_ true_divide true_divide_ trunc trunc_ "
      "type_as unflatten unfold uniform_ unique_consecutive unsafe_chunk unsafe_split "
      "unsafe_split_with_sizes unsqueeze_ untyped_storage var vdot vsplit where xlogy xlogy_ xpu "
      "zero_ "));
  return *set;
}

// Names of ATen methods that ordinary C++/CUDA types also have (std::complex::real,
// cooperative-groups any/all, user structs' add or max): flagged only on a known tensor.
const std::unordered_set<std::string>& CommonMethodNames() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      "all any data index name real imag sort resize unique values add sub mul div max min sum "
      "prod mean dot cross norm abs exp log pow sqrt rsqrt sin cos tan tanh floor ceil round sign "
      "neg fmod put"));
  return *set;
}

// Tensor methods that only read metadata (or allocate, like new_empty): allowed on any tensor.
const std::unordered_set<std::string>& TensorMetadataMethods() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      "data_ptr const_data_ptr mutable_data_ptr size sizes sym_size sym_sizes stride strides "
      "sym_stride sym_strides numel sym_numel dim ndimension dtype scalar_type device get_device "
      "is_cuda is_cpu is_contiguous is_non_overlapping_and_dense options defined element_size "
      "itemsize nbytes storage_offset layout is_floating_point is_complex is_signed requires_grad "
      "is_same is_same_size use_count packed_accessor packed_accessor32 packed_accessor64 "
      "generic_packed_accessor "
      "accessor suggest_memory_format toString type has_storage is_sparse is_quantized is_meta "
      "is_pinned new_empty new_empty_strided new_zeros new_ones new_full"));
  return *set;
}

// Tensor methods that return a view without running a kernel: allowed on any tensor.
const std::unordered_set<std::string>& TensorViewMethods() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      "view view_as unsqueeze squeeze transpose permute t narrow select unbind chunk split "
      "split_with_sizes tensor_split movedim moveaxis swapaxes swapdims detach alias diagonal mT "
      "data"));
  return *set;
}

// Free functions that argument-dependent lookup finds in namespace at for a Tensor argument,
// besides the method names (most ATen methods are functions too).
const std::unordered_set<std::string>& AtenExtraFunctions() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d convolution linear "
      "gelu silu mish elu selu celu leaky_relu hardtanh hardswish hardsigmoid softplus layer_norm "
      "batch_norm group_norm instance_norm rms_norm cat concat stack einsum dropout max_pool1d "
      "max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool2d "
      "adaptive_max_pool2d embedding bilinear cosine_similarity pairwise_distance cdist pad "
      "constant_pad_nd rand_like randn_like "
      "scaled_dot_product_attention"));
  return *set;
}

// Functions below torch::/at:: that create a tensor without reading any tensor's values: they
// allocate it, and zeros/ones/full fill it with a constant (outputs, accumulators). A fill is not
// the model's computation; the kernel audit counts torch's fill kernels as fills.
bool IsTensorCreationFunction(const std::string& name) {
  static const auto* set = new std::unordered_set<std::string>(
      WordSet("empty empty_like empty_strided zeros zeros_like ones ones_like full full_like"));
  return set->count(name) > 0;
}

namespace {

// The torch/at/c10 names a candidate may use, as the path after the root namespace. An entry
// ending in "::*" allows everything below it.
const std::unordered_set<std::string>& TorchAllowlist() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      "Tensor TensorBase TensorOptions ScalarType ScalarType::* Scalar Device DeviceType "
      "DeviceType::* DeviceIndex Layout Layout::* MemoryFormat MemoryFormat::* IntArrayRef "
      "ArrayRef "
      "OptionalIntArrayRef Half BFloat16 Float8_e4m3fn Float8_e5m2 complex optional nullopt "
      "make_optional string_view TensorAccessor PackedTensorAccessor PackedTensorAccessor32 "
      "PackedTensorAccessor64 GenericPackedTensorAccessor RestrictPtrTraits DefaultPtrTraits "
      "acc_type opmath_type numeric_limits irange ceil_div SmallVector Error ValueError TypeError "
      "IndexError "
      "NotImplementedError DeviceGuard OptionalDeviceGuard Dtype dtype device layout requires_grad "
      "memory_format elementSize toString isFloatingType isComplexType isIntegralType "
      "isReducedFloatingType typeMetaToScalarType scalarTypeToTypeMeta empty empty_like "
      "empty_strided zeros zeros_like ones ones_like full full_like "
      "cuda::getCurrentCUDAStream cuda::getDefaultCUDAStream cuda::CUDAStream "
      "cuda::CUDAGuard cuda::OptionalCUDAGuard cuda::getCurrentDeviceProperties "
      "cuda::getDeviceProperties cuda::current_device cuda::device_count "
      "cuda::getCurrentCUDABlasHandle cuda::warp_size cuda::CUDACachingAllocator::raw_alloc "
      "cuda::CUDACachingAllocator::raw_alloc_with_stream cuda::CUDACachingAllocator::raw_delete"));
  return *set;
}

}  // namespace

bool TorchNameAllowed(const std::vector<std::string>& parts) {
  const auto& allow = TorchAllowlist();
  std::string path;
  for (size_t k = 1; k < parts.size(); ++k) {
    path += (k == 1 ? "" : "::") + parts[k];
    if (k + 1 < parts.size() && allow.count(path + "::*")) return true;
  }
  if (allow.count(path)) return true;
  // Constants such as at::kFloat, torch::kCUDA, c10::kHalf.
  const std::string& last = parts.back();
  return parts.size() == 2 && last.size() > 1 && last[0] == 'k' &&
         std::isupper(static_cast<unsigned char>(last[1]));
}
void CheckNamespaceAliases(SourceScan& s) {
  const std::vector<Token>& T = s.src.tokens;
  for (size_t i = 0; i + 2 < T.size(); ++i) {
    size_t target = 0;
    if (T[i].IsIdent("using") && T[i + 1].IsIdent("namespace")) {
      target = i + 2;
    } else if (T[i].IsIdent("namespace") && T[i + 1].IsIdent() && T[i + 2].IsPunct("=")) {
      target = i + 3;
    } else {
      continue;
    }
    if (target < T.size() && T[target].IsPunct("::")) ++target;
    if (target >= T.size()) continue;
    const std::string& root = T[target].text;
    if (IsTorchRoot(root) || root == "aten") {
      s.Emit(kTorchNamespaceAlias, T[i].line,
             "aliasing namespace `" + root + "` hides the " + root + ":: prefix; write it out");
    }
  }
}

}  // namespace cuda_agent
