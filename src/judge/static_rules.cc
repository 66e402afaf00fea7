// static_rules.cc — the rule table and the checks of the C++/CUDA static scan.
#include "judge/static_rules.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "builder/extension_builder.h"
#include "judge/cpp_lexer.h"

namespace cuda_agent {
namespace {

// Rule indexes StaticRules(); the order is the documented order.
enum Rule : int {
  kForbiddenInclude,
  kTorchCompute,
  kTensorCompute,
  kTorchNamespaceAlias,
  kLibraryCompute,
  kPythonApi,
  kSideStream,
  kHostThread,
  kHostRoundtrip,
  kL2Persistence,
  kDeviceState,
  kStaticState,
  kGlobalState,
  kDynamicLoading,
  kSymbolInterposition,
  kLinkerTricks,
  kTimerPatching,
  kClockRead,
  kProcessEscape,
  kFileIo,
  kAsmEscape,
  kHiddenIdentifier,
  kUnscannableSource,
};

const std::vector<StaticRuleInfo> kRuleTable = {
    {"forbidden_include",
     "Only the CUDA toolkit, cuBLAS, cuDNN, cub, the C++ standard library, the binding headers and "
     "the candidate's own kernels/ headers may be included; other libraries (cutlass, thrust, "
     "cuBLASLt, curand, ATen internals) would do the work or hide it from the scan (C1).",
     "#include of a header outside the allowlist, a quoted include that leaves kernels/, a "
     "computed "
     "#include MACRO, #include_next/#import/#embed"},
    {"torch_compute",
     "The computation must happen in the candidate's own kernels; torch/ATen operators in C++ are "
     "the reference's kernels under another name (C1).",
     "a torch::/at::/c10:: name outside the allowlist (Tensor types, dtypes, torch::empty*, "
     "TensorOptions, the current stream, device guards), TORCH_LIBRARY, an unqualified call such "
     "as "
     "relu(x) that argument-dependent lookup sends to ATen"},
    {"tensor_compute",
     "Tensor methods and operators run ATen kernels: x.contiguous(), x.to(), x * 2 and x[i] are "
     "computation in torch, not in the candidate's kernels (C1).",
     "a method call on a tensor other than metadata (sizes, strides, dtype, data_ptr, options ...) "
     "and views (view, unsqueeze, squeeze, transpose, permute, narrow, select ...); arithmetic, "
     "comparison or indexing with a tensor operand; any ATen compute method on an unknown "
     "receiver"},
    {"torch_namespace_alias",
     "Aliasing a torch namespace hides the torch:: prefix the scan relies on.",
     "using namespace torch/at/c10/aten ...; namespace X = torch ..."},
    {"library_compute",
     "Third-party libraries may not do the work: cuBLAS only for GEMM, cuDNN only for "
     "convolution, nothing else (PAPER.md §2, C1).",
     "cuBLAS calls other than *gemm* and handle/stream/mode setup; cuBLASLt; cuDNN calls other "
     "than "
     "convolution and its descriptors; cub::Device* (device-wide algorithms), thrust::, cutlass::, "
     "cute::, curand, cufft, cusparse, cusolver, nccl, cutensor"},
    {"python_api",
     "Through the Python C API or pybind11, C++ can reach any Python object: patch "
     "torch.cuda.synchronize, walk the harness's frames, call torch back (A4, B2, C1). Binding "
     "files "
     "need only m.def and py::arg.",
     "Py*/_Py* C API names, PYBIND11_MODULE, py::/pybind11:: names other than module, arg, "
     "return_value_policy, gil_scoped_release, tuple/list/dict, .attr(...)"},
    {"side_stream",
     "Changing the caller's current stream, or the per-thread default stream, moves work where "
     "the harness's stream-ordered checks do not look (A1). Streams the candidate creates itself "
     "are allowed: work on them must be joined to the current stream before the forward returns, "
     "which the profile checks at run time (unjoined_stream).",
     "cudaStreamPerThread, CU_STREAM_PER_THREAD, cuStreamCreate*, getStreamFromExternal, "
     "setCurrentCUDAStream, CUDAStreamGuard and the other stream guards; Python: "
     "torch.cuda.Stream/stream"},
    {"host_thread",
     "Host threads and stream callbacks can finish (or start) the work after the timed call "
     "returned (A2).",
     "std::thread/jthread/async, pthread_create, cudaLaunchHostFunc, cudaStreamAddCallback, "
     "cuLaunchHostFunc"},
    {"host_roundtrip",
     "Host computation between a device-to-host and a host-to-device copy, or on managed memory, "
     "is invisible to the device-time measurement.",
     "cudaMemcpyDeviceToHost, cuMemcpyDtoH*, cudaMallocManaged, __managed__, cudaHostRegister, "
     "cudaHostAlloc, cudaMallocHost, cudaHostGetDevicePointer"},
    {"l2_persistence",
     "Persisting or evict-last L2 lines survive the judge's L2 flush, so timed calls find their "
     "data already cached (A7).",
     "cudaStreamSetAttribute, access policy windows (accessPolicyWindow, hitProp), "
     "cudaLimitPersistingL2CacheSize, cudaDeviceSetLimit, cuda::access_property::persisting, "
     "createpolicy/evict_last in inline PTX"},
    {"device_state",
     "Device-wide settings outlive the call and change how other code (the harness, the next "
     "judgement) runs; per-kernel settings through cudaFuncSetAttribute are allowed (A8, D).",
     "cudaDeviceReset, cudaSetDevice, cudaSetDeviceFlags, cudaDeviceSetCacheConfig, "
     "cudaDeviceSetSharedMemConfig, memory-pool attributes, context creation, CUDA IPC"},
    {"static_state",
     "A static or thread_local variable keeps state across calls: caches of outputs keyed by "
     "pointer or content, call counters that tell warm-up from timing (B4, A5).",
     "static/thread_local variables that are not const or constexpr (functions, static_assert, "
     "static_cast, constants and __shared__ arrays are fine)"},
    {"global_state",
     "A mutable namespace-scope or __device__ variable is a cache that outlives the call, "
     "invisible to Python (B4, A5); allocate scratch per call instead.",
     "namespace-scope variables that are not const/constexpr/__constant__, including __device__ "
     "arrays and counters; reading a symbol back or taking its address (cudaMemcpyFromSymbol*, "
     "cudaGetSymbolAddress): a __constant__ variable the host writes and reads back is a counter"},
    {"dynamic_loading", "Code loaded at run time is code the scan never saw (C4).",
     "dlopen/dlsym/RTLD_*, cuModuleLoad*, cuLibraryLoad*, cudaLibraryLoad*, nvrtc*, nvJitLink*, "
     "cuLink*; cudaGetDriverEntryPoint/cuGetProcAddress except for cuTensorMapEncode*"},
    {"symbol_interposition",
     "A function named like a CUDA, driver, profiler or libc API can interpose on it and fake "
     "timings or results (A4).",
     "a function definition named cuda*/cu*/cublas*/cudnn*/cupti*/nvtx* (capital letter after "
     "the prefix) or like a libc timing, loading or process function"},
    {"linker_tricks",
     "Load-time constructors and custom sections run code when the extension is imported, before "
     "and around the harness (A4, D).",
     "__attribute__((constructor/destructor/section/alias/ifunc/weak/weakref)), "
     "[[gnu::constructor]], #pragma weak/init/fini/section, .section in inline assembly"},
    {"timer_patching",
     "Changing memory protection or the profiler's state is how native code patches the "
     "harness's timers (A4).",
     "mprotect, dl_iterate_phdr, cupti*, cudaProfilerStart/Stop, cuProfilerStart/Stop"},
    {"clock_read",
     "A kernel needs no clock; clocks let code tell warm-up, checking and timing apart or measure "
     "the harness (A5).",
     "std::chrono, clock(), clock_gettime, gettimeofday, time(), rdtsc, clock64(), "
     "cudaEventElapsedTime, %globaltimer/%clock in inline PTX"},
    {"process_escape",
     "Processes, signals and the environment reach outside the judged call (D, A5).",
     "system, popen, fork, exec*, posix_spawn*, kill, ptrace, prctl, getenv/setenv, syscall, "
     "signal, atexit, exit, socket"},
    {"file_io",
     "Files are where the harness keeps inputs and expected outputs; a kernel never needs them "
     "(B2, D).",
     "fopen, open, openat, std::ifstream/ofstream/fstream, std::filesystem, opendir, mmap, unlink, "
     "rename, pipe, dup"},
    {"asm_escape", "Inline assembly can embed files at build time or make system calls.",
     ".incbin, .include, syscall, sysenter, int 0x80 in an asm statement"},
    {"hidden_identifier",
     "Token pasting and escaped characters build identifiers the scan cannot see (a pasted "
     "at::relu, dl\\u006fpen).",
     "## or %:%: anywhere in a source or header; a universal character name (\\u, \\U) outside "
     "literals"},
    {"unscannable_source",
     "A file the scan cannot read, or one too large to be a kernel, is not "
     "checked and therefore not accepted.",
     "a kernels/ source or header that cannot be read or is larger than 1 MiB"},
};

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
bool Contains(std::string_view s, std::string_view p) {
  return s.find(p) != std::string_view::npos;
}

std::unordered_set<std::string> WordSet(std::string_view words) {
  std::unordered_set<std::string> set;
  std::istringstream in{std::string(words)};
  std::string w;
  while (in >> w) set.insert(w);
  return set;
}

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
      "conj conj_physical conj_physical_ contiguous copy_ copysign copysign_ corrcoef cos_ cosh "
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
      "ne ne_ neg_ negative negative_ new_full new_ones new_tensor new_zeros nextafter nextafter_ "
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
      "is_same is_same_size use_count packed_accessor32 packed_accessor64 generic_packed_accessor "
      "accessor suggest_memory_format toString type has_storage is_sparse is_quantized is_meta "
      "is_pinned new_empty new_empty_strided"));
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
      "constant_pad_nd zeros_like ones_like full_like rand_like randn_like "
      "scaled_dot_product_attention"));
  return *set;
}

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
      "empty_strided cuda::getCurrentCUDAStream cuda::getDefaultCUDAStream cuda::CUDAStream "
      "cuda::CUDAGuard cuda::OptionalCUDAGuard cuda::getCurrentDeviceProperties "
      "cuda::getDeviceProperties cuda::current_device cuda::device_count "
      "cuda::getCurrentCUDABlasHandle cuda::warp_size cuda::CUDACachingAllocator::raw_alloc "
      "cuda::CUDACachingAllocator::raw_alloc_with_stream cuda::CUDACachingAllocator::raw_delete"));
  return *set;
}

// TorchNameAllowed says whether a qualified name rooted at torch/at/c10 (parts[0]) is allowed.
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

// Where an identifier rule applies.
enum class Use {
  kName,  // any free use: a call, a type, a constant, taking its address
  kCall,  // only a free call: followed by "("
  kAny,   // also as a member (.x or ->x), for struct fields such as accessPolicyWindow
};

struct IdentRule {
  Rule rule;
  Use use;
  const char* why;
};

const std::unordered_map<std::string, IdentRule>& IdentRules() {
  static const auto* map = [] {
    auto* m = new std::unordered_map<std::string, IdentRule>();
    auto add = [&](Rule rule, Use use, const char* why, std::string_view names) {
      for (const std::string& n : WordSet(names)) (*m)[n] = {rule, use, why};
    };
    add(kSideStream, Use::kName,
        "changes the caller's current stream or uses the per-thread stream",
        "cuStreamCreate cuStreamCreateWithPriority cudaStreamPerThread CU_STREAM_PER_THREAD "
        "getStreamFromExternal setCurrentCUDAStream CUDAStreamGuard OptionalCUDAStreamGuard "
        "CUDAMultiStreamGuard");
    add(kHostThread, Use::kName, "runs host work outside the call",
        "pthread_create thrd_create cudaLaunchHostFunc cuLaunchHostFunc cudaStreamAddCallback "
        "cuStreamAddCallback");
    add(kGlobalState, Use::kName,
        "reads a device symbol back or takes its address: state across calls",
        "cudaMemcpyFromSymbol cudaMemcpyFromSymbolAsync cudaGetSymbolAddress cuModuleGetGlobal "
        "cuModuleGetGlobal_v2");
    add(kHostRoundtrip, Use::kName, "moves the work to the host, where device time cannot see it",
        "cudaMemcpyDeviceToHost cuMemcpyDtoH cuMemcpyDtoHAsync cuMemcpyDtoH_v2 cudaMallocManaged "
        "cuMemAllocManaged __managed__ cudaHostRegister cuMemHostRegister cudaHostAlloc "
        "cuMemHostAlloc cudaMallocHost cuMemAllocHost cudaHostGetDevicePointer "
        "cuMemHostGetDevicePointer");
    add(kL2Persistence, Use::kName, "keeps data in L2 across the judge's flush",
        "cudaStreamSetAttribute cuStreamSetAttribute cudaStreamAttrValue cudaAccessPolicyWindow "
        "cudaLaunchAttributeAccessPolicyWindow cudaStreamAttributeAccessPolicyWindow "
        "cudaKernelNodeAttributeAccessPolicyWindow cudaAccessPropertyPersisting "
        "CU_ACCESS_PROPERTY_PERSISTING cudaLimitPersistingL2CacheSize "
        "CU_LIMIT_PERSISTING_L2_CACHE_SIZE cudaDeviceSetLimit cuCtxSetLimit "
        "cudaCtxResetPersistingL2Cache cuCtxResetPersistingL2Cache apply_access_property "
        "associate_access_property");
    add(kL2Persistence, Use::kAny, "keeps data in L2 across the judge's flush",
        "accessPolicyWindow hitProp missProp hitRatio");
    add(kDeviceState, Use::kName, "changes device-wide state",
        "cudaDeviceReset cudaSetDevice cudaSetDeviceFlags cudaSetValidDevices "
        "cudaDeviceSetCacheConfig cudaDeviceSetSharedMemConfig cudaDeviceSetMemPool "
        "cudaMemPoolSetAttribute cudaDeviceSetGraphMemAttribute cudaThreadSetLimit "
        "cudaThreadSetCacheConfig cuCtxCreate cuCtxCreate_v2 cuCtxDestroy cuCtxSetCurrent "
        "cuCtxPushCurrent cuCtxPopCurrent cuCtxSetCacheConfig cuDevicePrimaryCtxReset "
        "cuDevicePrimaryCtxSetFlags");
    add(kDynamicLoading, Use::kName, "loads code at run time",
        "dlopen dlmopen dlsym dlvsym GetProcAddress cuModuleGetFunction");
    add(kTimerPatching, Use::kName, "can patch the harness's timers",
        "mprotect pkey_mprotect dl_iterate_phdr cudaProfilerStart cudaProfilerStop "
        "cuProfilerStart cuProfilerStop");
    add(kClockRead, Use::kName, "reads a clock",
        "clock_gettime gettimeofday timespec_get rdtsc __rdtsc __rdtscp _rdtsc clock64 "
        "cudaEventElapsedTime cuEventElapsedTime");
    add(kClockRead, Use::kCall, "reads a clock", "clock time");
    add(kProcessEscape, Use::kName, "reaches outside the judged call",
        "popen fork vfork execl execle execlp execv execve execvp execvpe fexecve killpg tgkill "
        "ptrace prctl getenv secure_getenv setenv putenv unsetenv syscall sigaction atexit "
        "at_quick_exit _exit _Exit quick_exit chroot setuid setgid seteuid daemon "
        "sched_setaffinity");
    add(kProcessEscape, Use::kCall, "reaches outside the judged call",
        "system kill signal exit socket connect chdir clone");
    add(kFileIo, Use::kName, "accesses files",
        "fopen fopen64 freopen fdopen open64 openat creat opendir readdir scandir mmap mmap64 "
        "unlink unlinkat rmdir readlink symlink ftruncate dup2 dup3 memfd_create");
    add(kFileIo, Use::kCall, "accesses files",
        "open mkdir rename renameat remove link truncate dup pipe");
    add(kPythonApi, Use::kName, "defines or embeds a Python module",
        "PYBIND11_MODULE PYBIND11_EMBEDDED_MODULE PYBIND11_PLUGIN PyObject PyTypeObject "
        "PyThreadState PyFrameObject PyCodeObject PyInterpreterState");
    add(kTorchCompute, Use::kName, "registers operators in torch's dispatcher",
        "TORCH_LIBRARY TORCH_LIBRARY_IMPL TORCH_LIBRARY_FRAGMENT");
    return m;
  }();
  return *map;
}

struct PrefixRule {
  const char* prefix;
  Rule rule;
  const char* why;
};

const std::vector<PrefixRule> kPrefixRules = {
    {"cupti", kTimerPatching, "uses the profiler interface the judge times with"},
    {"CUpti", kTimerPatching, "uses the profiler interface the judge times with"},
    {"CUPTI_", kTimerPatching, "uses the profiler interface the judge times with"},
    {"RTLD_", kDynamicLoading, "loads code at run time"},
    {"LoadLibrary", kDynamicLoading, "loads code at run time"},
    {"cuModuleLoad", kDynamicLoading, "loads code at run time"},
    {"cuLibraryLoad", kDynamicLoading, "loads code at run time"},
    {"cudaLibraryLoad", kDynamicLoading, "loads code at run time"},
    {"cuLink", kDynamicLoading, "links code at run time"},
    {"nvrtc", kDynamicLoading, "compiles code at run time"},
    {"nvJitLink", kDynamicLoading, "links code at run time"},
    {"posix_spawn", kProcessEscape, "starts a process"},
    {"cudaIpc", kDeviceState, "shares device memory with other processes"},
    {"cuIpc", kDeviceState, "shares device memory with other processes"},
    {"cublasLt", kLibraryCompute, "cuBLASLt (epilogues compute beyond GEMM)"},
    {"curand", kLibraryCompute, "cuRAND"},
    {"cufft", kLibraryCompute, "cuFFT"},
    {"cusparse", kLibraryCompute, "cuSPARSE"},
    {"cusolver", kLibraryCompute, "cuSOLVER"},
    {"cutensor", kLibraryCompute, "cuTENSOR"},
    {"nccl", kLibraryCompute, "NCCL"},
    {"nvshmem", kLibraryCompute, "NVSHMEM"},
};

// cuBLAS names that are not GEMM but set up a GEMM (handles, streams, modes, errors).
const std::unordered_set<std::string>& CublasSetup() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      "cublasCreate cublasCreate_v2 cublasDestroy cublasDestroy_v2 cublasSetStream "
      "cublasSetStream_v2 cublasGetStream cublasGetStream_v2 cublasSetMathMode cublasGetMathMode "
      "cublasSetPointerMode cublasSetPointerMode_v2 cublasGetPointerMode cublasGetPointerMode_v2 "
      "cublasSetWorkspace cublasSetWorkspace_v2 cublasGetStatusString cublasGetStatusName "
      "cublasGetVersion cublasGetVersion_v2 cublasGetProperty"));
  return *set;
}

// cuDNN names that set up a convolution without being one.
const std::unordered_set<std::string>& CudnnSetup() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      "cudnnCreate cudnnDestroy cudnnSetStream cudnnGetStream cudnnGetErrorString cudnnGetVersion "
      "cudnnCreateTensorDescriptor cudnnDestroyTensorDescriptor cudnnSetTensor4dDescriptor "
      "cudnnSetTensor4dDescriptorEx cudnnSetTensorNdDescriptor cudnnSetTensorNdDescriptorEx "
      "cudnnGetTensor4dDescriptor cudnnGetTensorNdDescriptor cudnnCreateFilterDescriptor "
      "cudnnDestroyFilterDescriptor cudnnSetFilter4dDescriptor cudnnSetFilterNdDescriptor"));
  return *set;
}

// LibraryVerdict says why a cuBLAS/cuDNN identifier is not allowed, or "" when it is.
std::string LibraryVerdict(const std::string& name) {
  if (StartsWith(name, "cublas") && !StartsWith(name, "cublasLt")) {
    if (EndsWith(name, "_t") || CublasSetup().count(name)) return "";
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (Contains(lower, "gemm")) return "";
    return "cuBLAS may be used for GEMM only (cublas*gemm*), not " + name;
  }
  if (StartsWith(name, "cudnn")) {
    if (EndsWith(name, "_t") || CudnnSetup().count(name)) return "";
    if (Contains(name, "Convolution") && !Contains(name, "BiasActivation") &&
        !Contains(name, "BackwardBias")) {
      return "";
    }
    return "cuDNN may be used for convolutions only, not " + name;
  }
  return "";
}

// The paths below py:: / pybind11:: a binding file needs.
const std::unordered_set<std::string>& PybindAllowlist() {
  static const auto* set = new std::unordered_set<std::string>(
      WordSet("module module_ arg arg_v kw_only pos_only return_value_policy call_guard "
              "gil_scoped_release tuple make_tuple list dict none int_ float_ str bool_ "
              "error_already_set value_error type_error index_error"));
  return *set;
}

bool IsPythonCApiName(const std::string& n) {
  if (StartsWith(n, "_Py")) return true;
  if (!StartsWith(n, "Py") || n.size() < 3) return false;
  if (n[2] == '_') return true;
  return std::isupper(static_cast<unsigned char>(n[2])) && Contains(n, "_");
}

bool IsInterposingName(const std::string& n) {
  static const std::vector<std::string> kPrefixes = {"cuda", "cu",   "cublas", "cudnn", "cupti",
                                                     "nvtx", "nccl", "nvrtc",  "cufft", "curand"};
  for (const std::string& p : kPrefixes) {
    if (n.size() > p.size() && StartsWith(n, p) &&
        std::isupper(static_cast<unsigned char>(n[p.size()]))) {
      return true;
    }
  }
  if (StartsWith(n, "__cuda")) return true;
  static const auto* libc = new std::unordered_set<std::string>(WordSet(
      "dlopen dlsym dlclose clock clock_gettime gettimeofday time nanosleep usleep sleep "
      "pthread_create pthread_join malloc free calloc realloc mmap munmap mprotect open fopen read "
      "write getenv sched_yield"));
  return libc->count(n) > 0;
}

// The header names a candidate may include; an entry ending in "/" allows a folder.
const std::unordered_set<std::string>& IncludeAllowlist() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      // C++ standard library (no <thread>, <future>, <chrono>, <fstream>, <filesystem>, <csignal>).
      "algorithm any array atomic bit bitset cassert cctype cerrno cfloat charconv cinttypes "
      "climits cmath compare complex concepts cstddef cstdint cstdio cstdlib cstring deque "
      "exception functional initializer_list iomanip ios iosfwd iostream istream iterator limits "
      "list map memory new numbers numeric optional ostream queue random ratio set span sstream "
      "stack stdexcept string string_view tuple type_traits typeinfo unordered_map unordered_set "
      "utility valarray variant vector version "
      "assert.h float.h limits.h math.h stddef.h stdint.h stdio.h stdlib.h string.h stdbool.h "
      "inttypes.h "
      // CUDA toolkit.
      "cuda_runtime.h cuda_runtime_api.h cuda.h cudaTypedefs.h cuda_fp16.h cuda_fp16.hpp "
      "cuda_bf16.h cuda_bf16.hpp cuda_fp8.h cuda_fp8.hpp cuda_fp6.h cuda_fp4.h mma.h "
      "cuda_pipeline.h cuda_pipeline_primitives.h cuda_awbarrier.h cuda_awbarrier_primitives.h "
      "cooperative_groups.h device_launch_parameters.h vector_types.h vector_functions.h "
      "math_constants.h device_functions.h driver_types.h cooperative_groups/ cuda/ cub/ "
      "cublas_v2.h cudnn.h "
      // The binding side.
      "pybind11/pybind11.h pybind11/stl.h torch/extension.h torch/types.h torch/python.h "
      "torch/torch.h torch/all.h torch/csrc/utils/pybind.h ATen/ATen.h ATen/Tensor.h "
      "ATen/core/Tensor.h ATen/Dispatch.h ATen/cuda/CUDAContext.h ATen/cuda/Exceptions.h "
      "ATen/AccumulateType.h ATen/OpMathType.h ATen/TensorAccessor.h ATen/core/TensorAccessor.h "
      "ATen/ceil_div.h c10/cuda/ c10/util/ c10/core/ c10/macros/"));
  return *set;
}

bool IncludeAllowed(const std::string& name) {
  const auto& allow = IncludeAllowlist();
  if (allow.count(name)) return true;
  for (size_t slash = name.find('/'); slash != std::string::npos;
       slash = name.find('/', slash + 1)) {
    if (allow.count(name.substr(0, slash + 1))) return true;
  }
  return StartsWith(name, "sm_") && EndsWith(name, ".h");  // sm_60_atomic_functions.h ...
}

const std::unordered_set<std::string>& NotFunctionNames() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      "if for while switch return catch sizeof alignof decltype typeid static_assert noexcept "
      "new delete throw case do else using operator"));
  return *set;
}

bool IsOperandEnd(const Token& t) {
  return t.kind == TokenKind::kIdentifier || t.kind == TokenKind::kNumber || t.IsPunct(")") ||
         t.IsPunct("]");
}

// MatchClose returns the index of the bracket closing T[open] ("(", "[" or "{"), or T.size().
// T must have been paired (PairBrackets).
size_t MatchClose(const std::vector<Token>& T, size_t open) {
  return T[open].partner == Token::kNoPartner ? T.size() : T[open].partner;
}

// MatchOpen returns the index of the bracket opening T[close], or T.size().
size_t MatchOpen(const std::vector<Token>& T, size_t close) {
  return T[close].partner == Token::kNoPartner ? T.size() : T[close].partner;
}

// kLookahead bounds the scans that look for the end of a declaration or a template argument
// list, so that no input makes the scan quadratic.
constexpr size_t kLookahead = 256;

// Larger files are not scanned (and not accepted): no kernel source is this big.
constexpr uintmax_t kMaxSourceBytes = 1 << 20;

// Past this many violations a file's report says nothing new.
constexpr size_t kMaxViolationsPerFile = 100;

// SkipAngles returns the index after the ">" matching the "<" at `open` (a template argument
// list), or `open` when the brackets do not balance before a ";" or "{".
size_t SkipAngles(const std::vector<Token>& T, size_t open) {
  int depth = 0;
  for (size_t k = open; k < T.size() && k < open + kLookahead; ++k) {
    if (T[k].IsPunct("<")) ++depth;
    if (T[k].IsPunct(">")) --depth;
    if (T[k].IsPunct(">>")) depth -= 2;
    if (depth <= 0) return k + 1;
    if (T[k].IsPunct(";") || T[k].IsPunct("{")) break;
  }
  return open;
}

// QualifiedName is a chain a::b::c of identifiers in the token list.
struct QualifiedName {
  std::vector<std::string> parts;
  size_t first = 0;     // index of the first identifier
  size_t last = 0;      // index of the last identifier
  bool member = false;  // preceded by . or ->
};

bool IsTorchRoot(const std::string& root) {
  return root == "torch" || root == "at" || root == "c10";
}

// ChainAt reads the qualified name starting at identifier `i` (which must start the chain).
QualifiedName ChainAt(const std::vector<Token>& T, size_t i) {
  QualifiedName q;
  q.first = i;
  q.parts.push_back(T[i].text);
  size_t j = i;
  while (j + 2 < T.size() && T[j + 1].IsPunct("::") && T[j + 2].IsIdent()) {
    j += 2;
    if (T[j].IsIdent("template") && j + 2 < T.size() && T[j + 1].IsIdent()) ++j;
    q.parts.push_back(T[j].text);
  }
  q.last = j;
  if (i > 0 && (T[i - 1].IsPunct(".") || T[i - 1].IsPunct("->"))) q.member = true;
  if (i > 1 && T[i - 1].IsIdent("template") && (T[i - 2].IsPunct(".") || T[i - 2].IsPunct("->"))) {
    q.member = true;
  }
  return q;
}

// StartsChain: T[i] is an identifier that is not the continuation of a::b (after "a::" or
// "T<..>::").
bool StartsChain(const std::vector<Token>& T, size_t i) {
  if (!T[i].IsIdent()) return false;
  if (i >= 2 && T[i - 1].IsPunct("::") && (T[i - 2].IsIdent() || T[i - 2].IsPunct(">"))) {
    return false;
  }
  return true;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : "::") + p;
  return s;
}

// DirectiveGroups splits the directive tokens into one list per directive.
std::vector<std::vector<Token>> DirectiveGroups(const std::vector<Token>& all) {
  std::vector<std::vector<Token>> groups;
  for (const Token& t : all) {
    if (!t.in_directive) continue;
    if (t.directive_start || groups.empty()) groups.emplace_back();
    groups.back().push_back(t);
  }
  for (std::vector<Token>& g : groups) PairBrackets(g);
  return groups;
}

class Scanner {
 public:
  Scanner(std::string_view text, std::string rel_path, fs::path candidate_dir)
      : src_(LexSource(text)), rel_(std::move(rel_path)), candidate_dir_(std::move(candidate_dir)) {
    for (const Token& t : src_.tokens) {
      if (!t.in_directive) code_.push_back(t);
    }
    PairBrackets(code_);
    for (size_t i = 0; i + 2 < src_.tokens.size(); ++i) {
      if (src_.tokens[i].IsIdent("using") && src_.tokens[i + 1].IsIdent("namespace") &&
          src_.tokens[i + 2].IsIdent("std")) {
        using_std_ = true;
      }
    }
  }

  std::vector<StaticViolation> Run() {
    CheckIncludes();
    CheckNames(src_.tokens);
    CheckHiddenIdentifiers();
    CheckAsm();
    CheckAttributes();
    CheckPragmas();
    CheckNamespaceAliases();
    defined_ = DefinedFunctions(code_);
    CheckInterposition();
    TrackTensors();
    CheckMethods(code_, &tensor_use_);
    for (const std::vector<Token>& group : DirectiveGroups(src_.tokens)) {
      CheckMethods(group, nullptr);
      CheckStatic(group);
    }
    CheckTensorOperators();
    CheckAdlCalls();
    CheckStatic(code_);
    CheckGlobals();
    std::sort(found_.begin(), found_.end(),
              [](const StaticViolation& a, const StaticViolation& b) { return a.line < b.line; });
    return std::move(found_);
  }

 private:
  void Emit(Rule rule, int line, std::string message) {
    if (found_.size() >= kMaxViolationsPerFile || !emitted_.insert({rule, line}).second) return;
    found_.push_back({std::string(kRuleTable[rule].name), rel_, line, std::move(message)});
  }

  // --- includes -------------------------------------------------------------------------------

  bool QuotedIncludeIsOwn(const std::string& target) const {
    fs::path rel_dir = fs::path(rel_).parent_path();
    fs::path inside = (rel_dir / target).lexically_normal();
    auto first = inside.begin();
    if (first == inside.end() || first->string() != "kernels") return false;
    if (candidate_dir_.empty()) return true;
    std::error_code ec;
    return fs::is_regular_file(candidate_dir_ / inside, ec);
  }

  void CheckIncludes() {
    for (const Include& inc : src_.includes) {
      if (inc.directive != "include") {
        Emit(kForbiddenInclude, inc.line, "#" + inc.directive + " is not allowed; use #include");
        continue;
      }
      if (inc.computed) {
        Emit(kForbiddenInclude, inc.line,
             "a computed #include hides the header from the scan; name the header");
        continue;
      }
      const std::string& t = inc.target;
      bool climbs = false;
      for (const fs::path& part : fs::path(t)) climbs = climbs || part == "..";
      if (!inc.angled) {
        fs::path inside = (fs::path(rel_).parent_path() / t).lexically_normal();
        if (inside == kBindingHeader || inside == kPlainBindingHeader) continue;
        if (QuotedIncludeIsOwn(t) || (!climbs && IncludeAllowed(t))) continue;
        Emit(kForbiddenInclude, inc.line,
             "\"" + t + "\" is neither a file of kernels/ nor an allowed header");
        continue;
      }
      if (!climbs && IncludeAllowed(t)) continue;
      Emit(kForbiddenInclude, inc.line,
           "<" + t +
               "> is not an allowed header (allowed: the C++ standard library without "
               "threads/files/clocks, the CUDA toolkit, cub, cublas_v2.h, cudnn.h, the torch "
               "binding "
               "headers, your own kernels/ headers)");
    }
  }

  // --- names ----------------------------------------------------------------------------------

  // CheckNames applies the identifier, prefix, library and namespace rules to every name.
  void CheckNames(const std::vector<Token>& T) {
    for (size_t i = 0; i < T.size(); ++i) {
      if (!StartsChain(T, i)) continue;
      QualifiedName q = ChainAt(T, i);
      CheckName(T, q);
      i = q.last;
    }
  }

  void CheckName(const std::vector<Token>& T, const QualifiedName& q) {
    const std::string& last = q.parts.back();
    const std::string& root = q.parts.front();
    const int line = T[q.last].line;
    const bool qualified = q.parts.size() > 1;
    const bool free_use = !q.member && (!qualified || root == "std" || IsTorchRoot(root));
    const bool called = q.last + 1 < T.size() && T[q.last + 1].IsPunct("(");
    const std::string shown = "`" + Join(q.parts) + "`";

    if (last == "cudaGetDriverEntryPoint" || last == "cudaGetDriverEntryPointByVersion" ||
        last == "cuGetProcAddress" || last == "cuGetProcAddress_v2") {
      if (!q.member && !DriverEntryPointIsTensorMap(T, q.last)) {
        Emit(kDynamicLoading, line,
             shown + " may fetch only cuTensorMapEncode* (given as a string literal)");
      }
      return;
    }
    auto it = IdentRules().find(last);
    if (it != IdentRules().end()) {
      const IdentRule& r = it->second;
      const bool address_taken = q.first > 0 && T[q.first - 1].IsPunct("&") &&
                                 !(q.first > 1 && IsOperandEnd(T[q.first - 2]));
      bool applies =
          r.use == Use::kAny || (free_use && (r.use == Use::kName || called || address_taken));
      if (called && IsDeclaredName(T, q.first)) applies = false;  // int fork(); void S::open()
      if (root == "std" && last == "remove") applies = false;     // the <algorithm> one
      if (applies) {
        Emit(r.rule, line, shown + " " + r.why);
        return;
      }
    }
    if (!q.member && (!qualified || root == "std" || root == "cuda")) {
      for (const PrefixRule& p : kPrefixRules) {
        if (StartsWith(last, p.prefix)) {
          Emit(p.rule, line, shown + ": " + p.why + " is not allowed");
          return;
        }
      }
      if (std::string why = LibraryVerdict(last); !why.empty()) {
        Emit(kLibraryCompute, line, why);
        return;
      }
      if (IsPythonCApiName(last)) {
        Emit(kPythonApi, line, shown + " is the Python C API; binding files need only m.def");
        return;
      }
    }
    if (!qualified) {
      if (using_std_ && !q.member) CheckStdName(q.parts, line, shown);
      if (last == "chrono" && !q.member) Emit(kClockRead, line, shown + " reads clocks");
      return;
    }
    if (IsTorchRoot(root)) {
      if (!TorchNameAllowed(q.parts)) {
        Emit(kTorchCompute, line,
             shown +
                 " is not an allowed torch API in C++ (allowed: Tensor and dtype types, "
                 "torch::empty/empty_like/empty_strided, TensorOptions, the current stream, "
                 "device guards, TORCH_CHECK); compute in your own kernels");
      }
    } else if (root == "aten" || root == "caffe2") {
      Emit(kTorchCompute, line, shown + " is torch's internal API; compute in your own kernels");
    } else if (root == "py" || root == "pybind11") {
      std::vector<std::string> rest(q.parts.begin() + 1, q.parts.end());
      std::string path = Join(rest);
      if (!PybindAllowlist().count(path) && !StartsWith(path, "return_value_policy::")) {
        Emit(kPythonApi, line,
             shown + " reaches Python objects; binding files need only m.def and py::arg");
      }
    } else if (root == "std") {
      CheckStdName(std::vector<std::string>(q.parts.begin() + 1, q.parts.end()), line, shown);
    } else if (root == "cub") {
      if (StartsWith(q.parts[1], "Device") || StartsWith(q.parts[1], "Dispatch")) {
        Emit(kLibraryCompute, line,
             shown +
                 " is a device-wide cub algorithm (library kernels); block- and warp-level "
                 "cub primitives inside your kernels are fine");
      }
    } else if (root == "thrust" || root == "cutlass" || root == "cute") {
      Emit(kLibraryCompute, line, shown + ": " + root + " is not an allowed library");
    } else if (root == "cuda") {
      bool persisting = last == "persisting" && std::find(q.parts.begin(), q.parts.end(),
                                                          "access_property") != q.parts.end();
      if (persisting) Emit(kL2Persistence, line, shown + " keeps data in L2 across calls");
      if (q.parts.size() > 2 && q.parts[1] == "std" && q.parts[2] == "chrono") {
        Emit(kClockRead, line, shown + " reads clocks");
      }
    } else if (root == "gnu") {
      static const auto* tricks = new std::unordered_set<std::string>(
          WordSet("constructor destructor section alias ifunc weak weakref"));
      if (tricks->count(last)) Emit(kLinkerTricks, line, shown + " changes what runs at load time");
    } else if (root == "chrono") {
      Emit(kClockRead, line, shown + " reads clocks");
    } else if (root == "filesystem") {
      Emit(kFileIo, line, shown + " accesses files");
    }
  }

  // IsDeclaredName: the name at T[first] follows a type (int open(...)), so this is a
  // declaration of a function of that name, not a use.
  static bool IsDeclaredName(const std::vector<Token>& T, size_t first) {
    if (first == 0) return false;
    const Token& before = T[first - 1];
    static const auto* keywords = new std::unordered_set<std::string>(
        WordSet("return else do case throw co_return co_await co_yield new delete"));
    if (before.IsIdent()) return !keywords->count(before.text);
    return before.IsPunct(">") || before.IsPunct("~");
  }

  // CheckStdName handles names below std:: (or unqualified ones after `using namespace std`).
  void CheckStdName(const std::vector<std::string>& rest, int line, const std::string& shown) {
    if (rest.empty()) return;
    static const auto* threads =
        new std::unordered_set<std::string>(WordSet("thread jthread async packaged_task launch"));
    static const auto* files = new std::unordered_set<std::string>(
        WordSet("ifstream ofstream fstream filebuf basic_ifstream basic_ofstream basic_fstream "
                "filesystem"));
    const std::string& first = rest.front();
    if (threads->count(first)) Emit(kHostThread, line, shown + " runs host work outside the call");
    if (files->count(first)) Emit(kFileIo, line, shown + " accesses files");
    if (first == "chrono") Emit(kClockRead, line, shown + " reads clocks");
  }

  bool DriverEntryPointIsTensorMap(const std::vector<Token>& T, size_t i) const {
    if (i + 2 >= T.size() || !T[i + 1].IsPunct("(") || T[i + 2].kind != TokenKind::kString) {
      return false;
    }
    std::string_view literal = src_.Original(T[i + 2]);
    return StartsWith(literal, "\"cuTensorMapEncode");
  }

  // --- token-level rules ----------------------------------------------------------------------

  void CheckHiddenIdentifiers() {
    for (const Token& t : src_.tokens) {
      if (t.IsPunct("##") || t.IsPunct("%:%:")) {
        Emit(kHiddenIdentifier, t.line,
             "`" + t.text + "` builds identifiers the scan cannot see; write them out");
      }
    }
    for (size_t i = 0; i + 1 < src_.code.size(); ++i) {
      if (src_.code[i] == '\\' && (src_.code[i + 1] == 'u' || src_.code[i + 1] == 'U')) {
        Emit(kHiddenIdentifier, src_.line_of[i],
             "a universal character name outside a literal hides an identifier; write it out");
      }
    }
  }

  void CheckAsm() {
    const std::vector<Token>& T = src_.tokens;
    for (size_t i = 0; i < T.size(); ++i) {
      if (!(T[i].IsIdent("asm") || T[i].IsIdent("__asm__") || T[i].IsIdent("__asm"))) continue;
      size_t open = i + 1;
      while (open < T.size() && T[open].IsIdent()) ++open;  // volatile, goto, inline
      if (open >= T.size() || !T[open].IsPunct("(")) continue;
      size_t close = MatchClose(T, open);
      size_t end = close < T.size() ? T[close].offset : src_.spliced.size();
      std::string_view body = src_.OriginalRange(T[open].offset, end);
      int line = T[i].line;
      for (std::string_view bad :
           {".incbin", ".include", "syscall", "sysenter", "int $0x80", "int 0x80"}) {
        if (Contains(body, bad)) {
          Emit(kAsmEscape, line, "inline assembly uses `" + std::string(bad) + "`");
        }
      }
      for (std::string_view bad : {".section", ".pushsection", ".init_array"}) {
        if (Contains(body, bad)) {
          Emit(kLinkerTricks, line, "inline assembly uses `" + std::string(bad) + "`");
        }
      }
      for (std::string_view bad : {"globaltimer", "%clock", "rdtsc"}) {
        if (Contains(body, bad)) {
          Emit(kClockRead, line, "inline assembly reads a clock (`" + std::string(bad) + "`)");
        }
      }
      for (std::string_view bad : {"createpolicy", "evict_last"}) {
        if (Contains(body, bad)) {
          Emit(kL2Persistence, line,
               "inline PTX uses `" + std::string(bad) + "`, an L2 policy that survives the flush");
        }
      }
    }
  }

  void CheckAttributes() {
    static const auto* tricks = new std::unordered_set<std::string>(
        WordSet("constructor destructor section alias ifunc weak weakref"));
    const std::vector<Token>& T = src_.tokens;
    for (size_t i = 0; i + 1 < T.size(); ++i) {
      if (!T[i].IsIdent("__attribute__") || !T[i + 1].IsPunct("(")) continue;
      size_t close = std::min(MatchClose(T, i + 1), i + kLookahead);
      for (size_t k = i + 2; k < close && k < T.size(); ++k) {
        std::string name = T[k].text;
        if (StartsWith(name, "__") && EndsWith(name, "__") && name.size() > 4) {
          name = name.substr(2, name.size() - 4);
        }
        if (T[k].IsIdent() && tricks->count(name)) {
          Emit(kLinkerTricks, T[k].line,
               "__attribute__((" + T[k].text + ")) changes what runs at load time");
        }
      }
    }
  }

  void CheckPragmas() {
    static const auto* tricks =
        new std::unordered_set<std::string>(WordSet("weak init fini section"));
    for (const std::vector<Token>& g : DirectiveGroups(src_.tokens)) {
      if (g.size() >= 3 && g[1].IsIdent("pragma") && tricks->count(g[2].text)) {
        Emit(kLinkerTricks, g[2].line, "#pragma " + g[2].text + " changes what runs at load time");
      }
    }
    const std::vector<Token>& T = src_.tokens;
    for (size_t i = 0; i + 2 < T.size(); ++i) {
      if (!T[i].IsIdent("_Pragma") || !T[i + 1].IsPunct("(") ||
          T[i + 2].kind != TokenKind::kString) {
        continue;
      }
      std::string body(src_.Original(T[i + 2]));
      std::istringstream words(body.substr(body.empty() ? 0 : 1));
      std::string first;
      words >> first;
      if (tricks->count(first)) {
        Emit(kLinkerTricks, T[i].line,
             "_Pragma(\"" + first + " ...\") changes what runs at load time");
      }
    }
  }

  void CheckNamespaceAliases() {
    const std::vector<Token>& T = src_.tokens;
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
        Emit(kTorchNamespaceAlias, T[i].line,
             "aliasing namespace `" + root + "` hides the " + root + ":: prefix; write it out");
      }
    }
  }

  // DefinedFunctions collects the names of functions defined (with a body) in a token list.
  static std::unordered_set<std::string> DefinedFunctions(const std::vector<Token>& T) {
    std::unordered_set<std::string> names;
    for (size_t i = 1; i + 1 < T.size(); ++i) {
      if (!T[i].IsIdent() || !T[i + 1].IsPunct("(") || NotFunctionNames().count(T[i].text)) {
        continue;
      }
      const Token& before = T[i - 1];
      if (!(before.IsIdent() || before.IsPunct(">") || before.IsPunct("*") || before.IsPunct("&") ||
            before.IsPunct("::") || before.IsPunct("&&"))) {
        continue;
      }
      if (before.IsIdent() && NotFunctionNames().count(before.text)) continue;
      size_t k = MatchClose(T, i + 1);
      if (k >= T.size()) continue;
      ++k;
      while (k < T.size() && (T[k].IsIdent("const") || T[k].IsIdent("noexcept") ||
                              T[k].IsIdent("override") || T[k].IsIdent("final"))) {
        ++k;
      }
      if (k < T.size() && T[k].IsPunct("->")) {
        while (k < T.size() && !T[k].IsPunct("{") && !T[k].IsPunct(";")) ++k;
      }
      if (k < T.size() && T[k].IsPunct("{")) names.insert(T[i].text);
    }
    return names;
  }

  void CheckInterposition() {
    for (size_t i = 1; i + 1 < code_.size(); ++i) {
      const Token& t = code_[i];
      if (!t.IsIdent() || !defined_.count(t.text) || !code_[i + 1].IsPunct("(")) continue;
      if (code_[i - 1].IsPunct("::") || code_[i - 1].IsPunct(".") || code_[i - 1].IsPunct("->")) {
        continue;
      }
      if (!IsInterposingName(t.text)) continue;
      // Only the definition itself, not its calls: the token before the name is a type.
      const Token& before = code_[i - 1];
      if (before.IsIdent() || before.IsPunct("*") || before.IsPunct("&") || before.IsPunct(">")) {
        size_t close = MatchClose(code_, i + 1);
        if (close + 1 < code_.size() && !code_[close + 1].IsPunct(";")) {
          Emit(kSymbolInterposition, t.line,
               "a function named `" + t.text +
                   "` can interpose on the library function of that "
                   "name; rename it");
        }
      }
    }
  }

  // --- tensors --------------------------------------------------------------------------------

  // TensorTypeEnd returns the index after a Tensor type starting at i (torch::Tensor,
  // at::Tensor, ::at::Tensor or a bare Tensor), or 0 when there is none.
  size_t TensorTypeEnd(size_t i) const {
    const std::vector<Token>& T = code_;
    if (!T[i].IsIdent() || !StartsChain(T, i)) return 0;
    if (i > 0 && (T[i - 1].IsPunct(".") || T[i - 1].IsPunct("->"))) return 0;
    QualifiedName q = ChainAt(T, i);
    bool tensor = (q.parts.size() == 1 && q.parts[0] == "Tensor") ||
                  (q.parts.size() == 2 && IsTorchRoot(q.parts[0]) && q.parts[1] == "Tensor");
    return tensor ? q.last + 1 : 0;
  }

  // RhsIsTensor: does the expression code_[begin, end) (the initialiser of an auto variable)
  // yield a tensor? Only chains rooted at a tensor variable or torch::empty* are followed.
  template <typename IsLive>
  bool RhsIsTensor(size_t begin, size_t end, const IsLive& is_live) const {
    const std::vector<Token>& T = code_;
    size_t pos = begin;
    bool tensor = false;
    if (pos >= end) return false;
    if (T[pos].IsIdent() && is_live(T[pos].text)) {
      tensor = true;
      ++pos;
    } else if (StartsChain(T, pos)) {
      QualifiedName q = ChainAt(T, pos);
      const std::string& last = q.parts.back();
      if (q.parts.size() < 2 || !IsTorchRoot(q.parts.front())) return false;
      if (!(last == "empty" || last == "empty_like" || last == "empty_strided")) return false;
      pos = q.last + 1;
      if (pos >= end || !T[pos].IsPunct("(")) return false;
      pos = MatchClose(T, pos) + 1;
      tensor = true;
    } else {
      return false;
    }
    while (pos + 1 < end && tensor) {
      if (T[pos].IsPunct("[")) {
        pos = MatchClose(T, pos) + 1;
        continue;
      }
      if (!(T[pos].IsPunct(".") || T[pos].IsPunct("->"))) break;
      size_t name = pos + 1;
      if (T[name].IsIdent("template")) ++name;
      if (name >= end || !T[name].IsIdent()) break;
      const std::string& m = T[name].text;
      pos = name + 1;
      if (pos < end && T[pos].IsPunct("<")) pos = SkipAngles(T, pos);
      if (pos < end && T[pos].IsPunct("(")) pos = MatchClose(T, pos) + 1;
      tensor = TensorViewMethods().count(m) || AtenComputeMethods().count(m) ||
               CommonMethodNames().count(m);
    }
    return tensor;
  }

  struct LiveTensor {
    std::string name;
    int depth;
    bool param;
    bool entered = false;
  };

  // TrackTensors marks every use of a variable declared as a Tensor (parameters, locals, auto
  // variables initialised from a tensor) in tensor_use_, within its scope.
  void TrackTensors() {
    const std::vector<Token>& T = code_;
    tensor_use_.assign(T.size(), false);
    declaration_.assign(T.size(), false);
    // A stack: inner scopes on top; the `pending` top entries are parameters whose function body
    // (or statement, for a range-for) has not started yet.
    std::vector<LiveTensor> live;
    std::unordered_map<std::string, int> live_names;
    size_t pending = 0;
    auto pop = [&] {
      if (--live_names[live.back().name] == 0) live_names.erase(live.back().name);
      live.pop_back();
    };
    int depth = 0;
    int parens = 0;
    for (size_t i = 0; i < T.size(); ++i) {
      const Token& t = T[i];
      if (t.IsPunct("(")) ++parens;
      if (t.IsPunct(")")) parens = std::max(0, parens - 1);
      if (t.IsPunct("{")) {
        for (size_t k = 0; k < pending; ++k) live[live.size() - 1 - k].entered = true;
        pending = 0;
        ++depth;
        continue;
      }
      if (t.IsPunct("}")) {
        --depth;
        while (!live.empty() &&
               (live.back().depth > depth ||
                (live.back().param && live.back().entered && live.back().depth >= depth))) {
          pop();
        }
        pending = 0;
        continue;
      }
      if (t.IsPunct(";") && parens == 0) {
        for (; pending > 0 && !live.empty(); --pending) pop();  // a prototype, a braceless for
        continue;
      }
      if (!t.IsIdent()) continue;
      bool member =
          i > 0 && (T[i - 1].IsPunct(".") || T[i - 1].IsPunct("->") || T[i - 1].IsPunct("::"));
      if (!member && live_names.count(t.text)) tensor_use_[i] = true;
      // Declarations: Tensor [const] [&|&&] name, and auto [&] name = <tensor expression>.
      size_t k = TensorTypeEnd(i);
      bool is_auto = t.IsIdent("auto");
      if (k == 0 && is_auto) k = i + 1;
      if (k == 0) continue;
      while (k < T.size() && (T[k].IsIdent("const") || T[k].IsPunct("&") || T[k].IsPunct("&&") ||
                              T[k].IsIdent("__restrict__"))) {
        ++k;
      }
      if (k + 1 >= T.size() || !T[k].IsIdent()) continue;
      const Token& after = T[k + 1];
      bool declares = after.IsPunct("=") || after.IsPunct(";") || after.IsPunct(",") ||
                      after.IsPunct(")") || after.IsPunct("{") || after.IsPunct(":");
      if (!declares) continue;
      if (is_auto) {
        if (!after.IsPunct("=")) continue;
        size_t end = k + 2;
        int nest = 0;
        while (end < T.size() && end < k + kLookahead) {
          if (T[end].IsPunct("(") || T[end].IsPunct("[") || T[end].IsPunct("{")) ++nest;
          if (T[end].IsPunct(")") || T[end].IsPunct("]") || T[end].IsPunct("}")) --nest;
          if (nest < 0 || (nest == 0 && (T[end].IsPunct(";") || T[end].IsPunct(",")))) break;
          ++end;
        }
        auto is_live = [&](const std::string& name) { return live_names.count(name) > 0; };
        if (!RhsIsTensor(k + 2, end, is_live)) continue;
      }
      declaration_[k] = true;
      const bool param = parens > 0;
      if (!param) pending = 0;  // a local after parameters: their scope has begun
      live.push_back({T[k].text, depth, param});
      ++live_names[T[k].text];
      if (param) ++pending;
      i = k;  // the declared name is not a use
    }
  }

  // ReceiverIsTensor: is the expression ending at code_[k] (before a "." or "->") a tensor?
  bool ReceiverIsTensor(const std::vector<Token>& T, const std::vector<bool>& use, size_t k,
                        int budget = 16) const {
    if (budget == 0 || k >= T.size()) return false;
    if (T[k].IsIdent()) return use[k] && !declaration_[k];
    if (T[k].IsPunct("]")) {
      size_t open = MatchOpen(T, k);
      return open > 0 && open < T.size() && ReceiverIsTensor(T, use, open - 1, budget - 1);
    }
    if (!T[k].IsPunct(")")) return false;
    size_t open = MatchOpen(T, k);
    if (open == 0 || open >= T.size()) return false;
    size_t name = open - 1;
    if (T[name].IsPunct(">")) {
      int angle = 0;
      const size_t stop = name > kLookahead ? name - kLookahead : 0;
      while (name > stop) {
        if (T[name].IsPunct(">")) ++angle;
        if (T[name].IsPunct("<") && --angle == 0) break;
        --name;
      }
      if (name == stop) return false;
      --name;
    }
    if (!T[name].IsIdent() || name == 0) return false;
    const std::string& m = T[name].text;
    const Token& before = T[name - 1];
    if (before.IsPunct(".") || before.IsPunct("->") || (before.IsIdent("template") && name >= 2)) {
      size_t dot = before.IsIdent("template") ? name - 2 : name - 1;
      bool returns_tensor = TensorViewMethods().count(m) || AtenComputeMethods().count(m) ||
                            CommonMethodNames().count(m);
      return returns_tensor && dot > 0 && ReceiverIsTensor(T, use, dot - 1, budget - 1);
    }
    if (before.IsPunct("::")) {
      size_t first = name;
      while (first >= 2 && T[first - 1].IsPunct("::") && T[first - 2].IsIdent()) first -= 2;
      QualifiedName q = ChainAt(T, first);
      return q.parts.size() >= 2 && IsTorchRoot(q.parts.front()) &&
             (m == "empty" || m == "empty_like" || m == "empty_strided");
    }
    return false;
  }

  // CheckMethods: method calls that run ATen operators. `use` marks tensor variables (null for
  // directive tokens, where only the ATen compute names on unknown receivers are checked).
  void CheckMethods(const std::vector<Token>& T, const std::vector<bool>* use) {
    for (size_t i = 0; i + 1 < T.size(); ++i) {
      if (!(T[i].IsPunct(".") || T[i].IsPunct("->"))) continue;
      size_t name = i + 1;
      if (T[name].IsIdent("template") && name + 1 < T.size()) ++name;
      if (!T[name].IsIdent() || name + 1 >= T.size()) continue;
      if (!(T[name + 1].IsPunct("(") || T[name + 1].IsPunct("<"))) continue;
      const std::string& m = T[name].text;
      if (m == "attr" && T[name + 1].IsPunct("(")) {
        Emit(kPythonApi, T[name].line, "`.attr(...)` reaches Python objects from C++");
        continue;
      }
      bool tensor = use != nullptr && i > 0 && ReceiverIsTensor(T, *use, i - 1);
      if (tensor) {
        if (!TensorMetadataMethods().count(m) && !TensorViewMethods().count(m)) {
          Emit(kTensorCompute, T[name].line,
               "`." + m +
                   "()` on a tensor runs an ATen operator; only metadata (sizes, strides, "
                   "dtype, data_ptr, options ...) and views are allowed in C++");
        }
      } else if (AtenComputeMethods().count(m)) {
        Emit(kTensorCompute, T[name].line,
             "`." + m + "()` is an ATen tensor operator; compute in your own kernels");
      }
    }
  }

  void CheckTensorOperators() {
    static const auto* binary = new std::unordered_set<std::string>(
        WordSet("+ - * / % ^ | & == != < > <= >= += -= *= /= %= ^= |= &= <<= >>= ~"));
    const std::vector<Token>& T = code_;
    for (size_t i = 0; i < T.size(); ++i) {
      if (!tensor_use_[i]) continue;
      const std::string& x = T[i].text;
      if (i + 1 < T.size() && (T[i + 1].IsPunct(".") || T[i + 1].IsPunct("->"))) continue;
      if (i + 1 < T.size()) {
        const Token& next = T[i + 1];
        if (next.IsPunct("[")) {
          Emit(kTensorCompute, T[i].line,
               "indexing tensor `" + x + "` runs ATen operators; index data_ptr() in a kernel");
          continue;
        }
        if (next.kind == TokenKind::kPunct && binary->count(next.text) && !next.IsPunct("~")) {
          Emit(kTensorCompute, T[i].line,
               "`" + x + " " + next.text + "` is tensor arithmetic in ATen; compute in a kernel");
          continue;
        }
      }
      if (i > 0) {
        const Token& prev = T[i - 1];
        if (prev.kind != TokenKind::kPunct || !binary->count(prev.text)) continue;
        bool pointer_like = prev.IsPunct("*") || prev.IsPunct("&");
        if (pointer_like && !(i >= 2 && IsOperandEnd(T[i - 2]))) continue;
        Emit(kTensorCompute, T[i].line,
             "`" + prev.text + " " + x + "` is tensor arithmetic in ATen; compute in a kernel");
      }
    }
  }

  // CheckAdlCalls: relu(x) with a Tensor x finds at::relu by argument-dependent lookup.
  void CheckAdlCalls() {
    const std::vector<Token>& T = code_;
    for (size_t i = 0; i + 2 < T.size(); ++i) {
      if (!T[i].IsIdent() || !T[i + 1].IsPunct("(")) continue;
      if (i > 0 && (T[i - 1].IsPunct(".") || T[i - 1].IsPunct("->") || T[i - 1].IsPunct("::"))) {
        continue;
      }
      const std::string& f = T[i].text;
      if (defined_.count(f)) continue;
      if (!AtenComputeMethods().count(f) && !CommonMethodNames().count(f) &&
          !AtenExtraFunctions().count(f)) {
        continue;
      }
      size_t close = std::min(MatchClose(T, i + 1), i + kLookahead);
      for (size_t k = i + 2; k < close && k + 1 < T.size(); ++k) {
        const Token& before = T[k - 1];
        const Token& after = T[k + 1];
        bool whole_argument = (before.IsPunct("(") || before.IsPunct(",") || before.IsPunct("{")) &&
                              (after.IsPunct(",") || after.IsPunct(")") || after.IsPunct("}"));
        if (tensor_use_[k] && whole_argument) {
          Emit(kTorchCompute, T[i].line,
               "`" + f + "(" + T[k].text + ", ...)` on a tensor calls at::" + f +
                   " (argument-dependent lookup); compute in your own kernels");
          break;
        }
      }
    }
  }

  // --- persistent state -----------------------------------------------------------------------

  // ConstDeclaration: the declaration tokens T[begin, end) make an immutable object (constexpr,
  // __constant__, __shared__, or const without a mutable pointer after the last const).
  static bool ConstDeclaration(const std::vector<Token>& T, size_t begin, size_t end) {
    size_t last_const = end;
    for (size_t k = begin; k < end; ++k) {
      if (T[k].IsIdent("constexpr") || T[k].IsIdent("__constant__") || T[k].IsIdent("__shared__") ||
          T[k].IsIdent("consteval")) {
        return true;
      }
      if (T[k].IsIdent("const")) last_const = k;
    }
    if (last_const == end) return false;
    for (size_t k = last_const + 1; k < end; ++k) {
      if (T[k].IsPunct("*")) return false;
    }
    return true;
  }

  // LooksLikeParameters: the contents of T[open]'s parentheses declare parameters (a function
  // declaration) rather than pass constructor arguments.
  static bool LooksLikeParameters(const std::vector<Token>& T, size_t open, size_t close) {
    if (close == open + 1) return true;
    static const auto* types = new std::unordered_set<std::string>(WordSet(
        "void int float double char bool unsigned signed long short auto const size_t int64_t "
        "int32_t uint32_t uint64_t"));
    for (size_t k = open + 1; k < close; ++k) {
      if (T[k].IsIdent() && types->count(T[k].text)) return true;
      if (k + 1 < close && T[k].IsIdent() && T[k + 1].IsIdent()) return true;
      if (k + 2 < close && T[k].IsIdent() &&
          (T[k + 1].IsPunct("&") || T[k + 1].IsPunct("*") || T[k + 1].IsPunct("&&")) &&
          T[k + 2].IsIdent()) {
        return true;
      }
      if (k + 1 < close && T[k].IsPunct(">") && T[k + 1].IsIdent()) return true;
    }
    return false;
  }

  // CheckStatic: static and thread_local variables that are not immutable.
  void CheckStatic(const std::vector<Token>& T) {
    static const auto* function_tail = new std::unordered_set<std::string>(
        WordSet("{ const noexcept -> override final throw __attribute__ try"));
    for (size_t i = 0; i < T.size(); ++i) {
      if (!T[i].IsIdent("static") && !T[i].IsIdent("thread_local")) continue;
      size_t j = i + 1;
      int angle = 0;
      for (; j < T.size() && j < i + kLookahead; ++j) {
        const Token& t = T[j];
        if (t.IsPunct("<")) ++angle;
        if (t.IsPunct(">") && angle > 0) --angle;
        if (t.IsPunct(">>") && angle > 0) angle = std::max(0, angle - 2);
        if (angle > 0) continue;
        if (t.IsPunct("(") || t.IsPunct("=") || t.IsPunct(";") || t.IsPunct("{") ||
            t.IsPunct("[") || t.IsPunct(",")) {
          break;
        }
      }
      if (j >= T.size() || j >= i + kLookahead) continue;
      bool kernel = false;
      for (size_t k = i + 1; k < j; ++k) kernel = kernel || T[k].IsIdent("__global__");
      if (kernel) continue;
      if (T[j].IsPunct("(")) {
        size_t close = MatchClose(T, j);
        bool declarator_group =
            j + 1 < T.size() &&
            (T[j + 1].IsPunct("*") || T[j + 1].IsPunct("&") || T[j + 1].IsPunct("^"));
        if (!declarator_group) {
          if (close + 1 >= T.size()) continue;
          const Token& after = T[close + 1];
          if (function_tail->count(after.text)) continue;
          bool ends = after.IsPunct(";") || after.IsPunct(",") || after.IsPunct("=");
          if (!ends || LooksLikeParameters(T, j, close)) continue;
        }
      }
      // A variable. Registration objects of REGISTER_BINDING written out are fine.
      bool registrar = false;
      std::string name;
      for (size_t k = i + 1; k < j; ++k) {
        registrar = registrar || T[k].IsIdent("BindingRegistrar");
        if (T[k].IsIdent() && !T[k].IsIdent("const")) name = T[k].text;
      }
      if (registrar || ConstDeclaration(T, i + 1, j)) continue;
      if (T[j].IsPunct("(") && j + 2 < T.size() && T[j + 2].IsIdent()) name = T[j + 2].text;
      Emit(kStaticState, T[i].line,
           T[i].text + " variable `" + name +
               "` keeps state across calls (a cache or a call "
               "counter); allocate per call, or make it const/constexpr");
    }
  }

  enum class Scope { kNamespace, kBlock };

  // CheckGlobals: mutable variables at namespace scope, including __device__ globals.
  void CheckGlobals() {
    const std::vector<Token>& T = code_;
    std::vector<Scope> scopes = {Scope::kNamespace};
    size_t begin = 0;
    bool done = false;  // the current statement was already judged (an initialiser in braces)
    int parens = 0;
    for (size_t i = 0; i < T.size(); ++i) {
      const Token& t = T[i];
      bool at_namespace = scopes.back() == Scope::kNamespace;
      if (t.IsPunct("(")) ++parens;
      if (t.IsPunct(")")) parens = std::max(0, parens - 1);
      if (t.IsPunct("{")) {
        Scope kind = Scope::kBlock;
        if (at_namespace && parens == 0) {
          if (OpensNamespace(T, begin, i)) {
            kind = Scope::kNamespace;
          } else if (!done && IsVariableWithBraces(T, begin, i)) {
            CheckNamespaceVariable(T, begin, i);
            done = true;
          }
        }
        scopes.push_back(kind);
        if (kind == Scope::kNamespace) begin = i + 1;
        continue;
      }
      if (t.IsPunct("}")) {
        if (scopes.size() > 1) scopes.pop_back();
        if (scopes.back() == Scope::kNamespace && !done) begin = i + 1;
        continue;
      }
      if (t.IsPunct(";") && at_namespace && parens == 0) {
        if (!done) CheckNamespaceStatement(T, begin, i);
        begin = i + 1;
        done = false;
      }
    }
  }

  static bool OpensNamespace(const std::vector<Token>& T, size_t begin, size_t brace) {
    for (size_t k = begin; k < brace; ++k) {
      if (T[k].IsIdent("namespace")) return true;
    }
    // extern "C" {
    return brace >= begin + 2 && T[brace - 2].IsIdent("extern") &&
           T[brace - 1].kind == TokenKind::kString;
  }

  // IsVariableWithBraces: `int a[] = {..}` or `int x{0}` (not a function, class or enum body).
  static bool IsVariableWithBraces(const std::vector<Token>& T, size_t begin, size_t brace) {
    for (size_t k = begin; k < brace; ++k) {
      if (T[k].IsIdent("class") || T[k].IsIdent("struct") || T[k].IsIdent("union") ||
          T[k].IsIdent("enum") || T[k].IsPunct("(")) {
        bool assigned_first = false;
        for (size_t m = begin; m < k; ++m) assigned_first = assigned_first || T[m].IsPunct("=");
        if (!assigned_first) return false;
      }
    }
    for (size_t k = begin; k < brace; ++k) {
      if (T[k].IsPunct("=")) return true;
    }
    return brace > begin && T[brace - 1].IsIdent() && brace - begin >= 2;
  }

  void CheckNamespaceStatement(const std::vector<Token>& T, size_t begin, size_t end) {
    size_t b = begin;
    if (b < end && T[b].IsIdent("template") && b + 1 < end && T[b + 1].IsPunct("<")) {
      b = SkipAngles(T, b + 1);
    }
    if (b >= end) return;
    static const auto* skip = new std::unordered_set<std::string>(
        WordSet("using typedef namespace static_assert friend class struct union enum template"));
    if (T[b].IsIdent() && skip->count(T[b].text)) return;
    size_t first_paren = end;
    size_t first_assign = end;
    for (size_t k = b; k < end; ++k) {
      if (T[k].IsIdent("static") || T[k].IsIdent("thread_local")) return;  // static_state's
      if (T[k].IsPunct("(") && first_paren == end) first_paren = k;
      if (T[k].IsPunct("=") && first_assign == end) first_assign = k;
    }
    if (first_paren < first_assign) {
      bool declarator_group = first_paren + 1 < end &&
                              (T[first_paren + 1].IsPunct("*") || T[first_paren + 1].IsPunct("&"));
      if (!declarator_group) return;  // a function declaration or a macro invocation
    }
    if (end - b < 2) return;
    CheckNamespaceVariable(T, b, end);
  }

  void CheckNamespaceVariable(const std::vector<Token>& T, size_t begin, size_t end) {
    size_t stop = end;
    for (size_t k = begin; k < end; ++k) {
      if (T[k].IsPunct("=") || T[k].IsPunct("[") || T[k].IsPunct("{")) {
        stop = k;
        break;
      }
    }
    if (stop + 1 < end && T[stop].IsPunct("=") && T[stop + 1].IsPunct("[")) return;  // a lambda
    if (ConstDeclaration(T, begin, stop)) return;
    std::string name;
    bool device = false;
    for (size_t k = begin; k < stop; ++k) {
      if (T[k].IsIdent()) name = T[k].text;
      device = device || T[k].IsIdent("__device__") || T[k].IsIdent("__managed__");
    }
    if (name.empty()) return;
    Emit(kGlobalState, T[begin].line,
         std::string(device ? "__device__ " : "") + "global `" + name +
             "` is mutable state that outlives the call (a cache or a counter); allocate "
             "scratch per call (torch::empty + cudaMemsetAsync), or make it const/constexpr");
  }

  LexedSource src_;
  std::string rel_;
  fs::path candidate_dir_;
  std::vector<Token> code_;  // tokens outside preprocessor directives
  std::vector<bool> tensor_use_;
  std::vector<bool> declaration_;
  std::unordered_set<std::string> defined_;
  bool using_std_ = false;
  std::set<std::pair<int, int>> emitted_;  // (rule, line)
  std::vector<StaticViolation> found_;
};

bool IsScannedExtension(const fs::path& p) {
  static const std::set<std::string> kExts = {".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp", ".inl"};
  return kExts.count(p.extension().string()) > 0;
}

}  // namespace

const std::vector<StaticRuleInfo>& StaticRules() { return kRuleTable; }

std::vector<StaticViolation> ScanSource(std::string_view text, const std::string& rel_path,
                                        const fs::path& candidate_dir) {
  return Scanner(text, rel_path, candidate_dir).Run();
}

std::vector<StaticViolation> ScanCandidateSources(const fs::path& candidate_dir) {
  const std::string rule(kRuleTable[kUnscannableSource].name);
  std::vector<StaticViolation> all;
  for (const fs::path& rel : ListFilesRecursive(candidate_dir / "kernels")) {
    if (!IsScannedExtension(rel)) continue;
    fs::path file = fs::path("kernels") / rel;
    std::error_code ec;
    const uintmax_t size = fs::file_size(candidate_dir / file, ec);
    if (!ec && size > kMaxSourceBytes) {
      all.push_back({rule, file.generic_string(), 1,
                     std::to_string(size) + " bytes: a kernel source may have at most " +
                         std::to_string(kMaxSourceBytes)});
      continue;
    }
    Result<std::string> text = ReadFile(candidate_dir / file);
    if (!text.ok()) {
      all.push_back({rule, file.generic_string(), 1, text.status().message()});
      continue;
    }
    std::vector<StaticViolation> found =
        ScanSource(text.value(), file.generic_string(), candidate_dir);
    all.insert(all.end(), found.begin(), found.end());
  }
  return all;
}

std::string FormatViolation(const StaticViolation& v) {
  return v.rule + ": " + v.file + ":" + std::to_string(v.line) + ": " + v.message;
}

}  // namespace cuda_agent
