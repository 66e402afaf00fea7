// rules.cc — the rule table: every C++/CUDA rule with its rationale, what it matches and the
// HACKS.md classes it stops. docs/static-rules.md documents each (a test checks that it does).
#include "judge/static/rules.h"

namespace cuda_agent {

const std::vector<StaticRuleInfo>& RuleTable() {
  static const auto* table = new std::vector<StaticRuleInfo>{
      {"forbidden_include",
       "Only the CUDA toolkit, cuBLAS, cuDNN, cub, the C++ standard library, the binding headers "
       "and "
       "the candidate's own kernels/ headers may be included; other libraries (cutlass, thrust, "
       "cuBLASLt, curand, ATen internals) would do the work or hide it from the scan (C1).",
       "#include of a header outside the allowlist, a quoted include that leaves kernels/, a "
       "computed "
       "#include MACRO, #include_next/#import/#embed",
       "C1"},
      {"torch_compute",
       "The computation must happen in the candidate's own kernels; torch/ATen operators in C++ "
       "are "
       "the reference's kernels under another name (C1).",
       "a torch::/at::/c10:: name outside the allowlist (Tensor types, dtypes, torch::empty*, "
       "torch::zeros*/ones*/full* (constant tensors), TensorOptions, the current stream, device "
       "guards), TORCH_LIBRARY, an unqualified call such as relu(x) that argument-dependent lookup "
       "sends to ATen",
       "C1"},
      {"tensor_compute",
       "Tensor methods and operators run ATen kernels: x.to(torch::kHalf), x.sum(), x * 2 and x[i] "
       "are computation in torch, not in the candidate's kernels (C1).",
       "a method call on a tensor other than metadata (sizes, strides, dtype, data_ptr, options, "
       "packed_accessor ...), views (view, view_as, unsqueeze, squeeze, transpose, permute, "
       "narrow, select ...) and data movement (contiguous(), reshape(), flatten(), cuda(), "
       "to(<CUDA device or x.device()>)); arithmetic, comparison or indexing with a tensor "
       "operand (an integer subscript x[i] only to take a sub-tensor or its data_ptr() is a "
       "view); any ATen compute method on an unknown receiver",
       "C1"},
      {"torch_namespace_alias",
       "Aliasing a torch namespace hides the torch:: prefix the scan relies on.",
       "using namespace torch/at/c10/aten ...; namespace X = torch ...", "C1"},
      {"library_compute",
       "Third-party libraries may not do the work: cuBLAS only for GEMM, cuDNN only for "
       "convolution, nothing else (PAPER.md §2, C1).",
       "cuBLAS calls other than *gemm* and handle/stream/mode setup; cuBLASLt; cuDNN calls other "
       "than "
       "convolution and its descriptors; cub::Device* (device-wide algorithms), thrust::, "
       "cutlass::, "
       "cute::, curand, cufft, cusparse, cusolver, nccl, cutensor",
       "C1"},
      {"python_api",
       "Through the Python C API or pybind11, C++ can reach any Python object: patch "
       "torch.cuda.synchronize, walk the harness's frames, call torch back (A4, B2, C1). Binding "
       "files "
       "need only m.def and py::arg.",
       "Py*/_Py* C API names, PYBIND11_MODULE, py::/pybind11:: names other than module, arg, "
       "return_value_policy, gil_scoped_release, tuple/list/dict, .attr(...)",
       "A4 B2 C1 C4"},
      {"side_stream",
       "Changing the caller's current stream, or the per-thread default stream, moves work where "
       "the harness's stream-ordered checks do not look (A1). Streams the candidate creates itself "
       "are allowed: work on them must be joined to the current stream before the forward returns, "
       "which the profile checks at run time (unjoined_stream).",
       "cudaStreamPerThread, CU_STREAM_PER_THREAD, cuStreamCreate*, getStreamFromExternal, "
       "setCurrentCUDAStream, CUDAStreamGuard and the other stream guards; Python: "
       "torch.cuda.Stream/stream",
       "A1"},
      {"host_thread",
       "Host threads and stream callbacks can finish (or start) the work after the timed call "
       "returned (A2).",
       "std::thread/jthread/async, pthread_create, cudaLaunchHostFunc, cudaStreamAddCallback, "
       "cuLaunchHostFunc",
       "A2"},
      {"host_roundtrip",
       "Host computation between a device-to-host and a host-to-device copy, or on managed memory, "
       "is invisible to the device-time measurement.",
       "cudaMemcpyDeviceToHost, cuMemcpyDtoH*, cudaMallocManaged, __managed__, cudaHostRegister, "
       "cudaHostAlloc, cudaMallocHost, cudaHostGetDevicePointer",
       "A1"},
      {"l2_persistence",
       "Persisting or evict-last L2 lines survive the judge's L2 flush, so timed calls find their "
       "data already cached (A7).",
       "cudaStreamSetAttribute, access policy windows (accessPolicyWindow, hitProp), "
       "cudaLimitPersistingL2CacheSize, cudaDeviceSetLimit, cuda::access_property::persisting, "
       "createpolicy/evict_last in inline PTX",
       "A7"},
      {"device_state",
       "Device-wide settings outlive the call and change how other code (the harness, the next "
       "judgement) runs; per-kernel settings through cudaFuncSetAttribute are allowed (A8, D).",
       "cudaDeviceReset, cudaSetDevice (but to an input tensor's own device: "
       "cudaSetDevice(x.get_device()), cudaSetDevice(x.device().index())), cudaSetDeviceFlags, "
       "cudaDeviceSetCacheConfig, "
       "cudaDeviceSetSharedMemConfig, memory-pool attributes, context creation, CUDA IPC",
       "A8 D"},
      {"static_state",
       "A static or thread_local variable keeps state across calls: caches of outputs keyed by "
       "pointer or content, call counters that tell warm-up from timing (B4, A5).",
       "static/thread_local variables that are not const or constexpr (functions, static_assert, "
       "static_cast, constants and __shared__ arrays are fine)",
       "A5 B4"},
      {"global_state",
       "A mutable namespace-scope or __device__ variable is a cache that outlives the call, "
       "invisible to Python (B4, A5); allocate scratch per call instead.",
       "namespace-scope variables that are not const/constexpr/__constant__, including __device__ "
       "arrays and counters; reading a symbol back or taking its address (cudaMemcpyFromSymbol*, "
       "cudaGetSymbolAddress): a __constant__ variable the host writes and reads back is a counter",
       "A5 A6 B4"},
      {"dynamic_loading", "Code loaded at run time is code the scan never saw (C4).",
       "dlopen/dlsym/RTLD_*, cuModuleLoad*, cuLibraryLoad*, cudaLibraryLoad*, nvrtc*, nvJitLink*, "
       "cuLink*; cudaGetDriverEntryPoint/cuGetProcAddress except for cuTensorMapEncode*",
       "C4"},
      {"symbol_interposition",
       "A function named like a CUDA, driver, profiler or libc API can interpose on it and fake "
       "timings or results (A4).",
       "a function definition named cuda*/cu*/cublas*/cudnn*/cupti*/nvtx* (capital letter after "
       "the prefix) or like a libc timing, loading or process function",
       "A4"},
      {"linker_tricks",
       "Load-time constructors and custom sections run code when the extension is imported, before "
       "and around the harness (A4, D).",
       "__attribute__((constructor/destructor/section/alias/ifunc/weak/weakref)), "
       "[[gnu::constructor]], #pragma weak/init/fini/section, .section in inline assembly",
       "A4 D"},
      {"timer_patching",
       "Changing memory protection or the profiler's state is how native code patches the "
       "harness's timers (A4).",
       "mprotect, dl_iterate_phdr, cupti*, cudaProfilerStart/Stop, cuProfilerStart/Stop", "A4"},
      {"clock_read",
       "A kernel needs no clock; clocks let code tell warm-up, checking and timing apart or "
       "measure "
       "the harness (A5).",
       "std::chrono, clock(), clock_gettime, gettimeofday, time(), rdtsc, clock64(), "
       "cudaEventElapsedTime, %globaltimer/%clock in inline PTX",
       "A5"},
      {"process_escape",
       "Processes, signals and the environment reach outside the judged call (D, A5).",
       "system, popen, fork, exec*, posix_spawn*, kill, ptrace, prctl, getenv/setenv, syscall, "
       "signal, atexit, exit, socket",
       "A5 D"},
      {"file_io",
       "Files are where the harness keeps inputs and expected outputs; a kernel never needs them "
       "(B2, D).",
       "fopen, open, openat, std::ifstream/ofstream/fstream, std::filesystem, opendir, mmap, "
       "unlink, "
       "rename, pipe, dup",
       "B2 D"},
      {"asm_escape", "Inline assembly can embed files at build time or make system calls.",
       ".incbin, .include, syscall, sysenter, int 0x80 in an asm statement", "D"},
      {"hidden_identifier",
       "Token pasting and escaped characters build identifiers the scan cannot see (a pasted "
       "at::relu, dl\\u006fpen).",
       "## or %:%: anywhere in a source or header; a universal character name (\\u, \\U) outside "
       "literals",
       "C1"},
      {"backend_switch",
       "Only under a policy that lets torch compute (kernelbench): torch's eager operators may do "
       "part of the work, but global switches change how torch's kernels (and the reference and "
       "baselines in other processes' terms) compute, and the JIT, CUDA graphs, operator "
       "registration and the dispatcher's internals are not kernels of the candidate's (B11, C1).",
       "at::globalContext(), at::Context setters (setAllowTF32CuBLAS, setBenchmarkCuDNN, "
       "setFloat32MatmulPrecision, setDeterministicCuDNN ...), torch::jit, autocast, CUDAGraph, "
       "TORCH_LIBRARY*, c10::impl, DispatchKey, CUDACachingAllocator",
       "B11 C1"},
      {"unscannable_source",
       "A file the scan cannot read, or one too large to be a kernel, is not "
       "checked and therefore not accepted.",
       "a kernels/ source or header that cannot be read or is larger than 1 MiB", "C4"},
  };
  return *table;
}

}  // namespace cuda_agent
