// names.cc — the rules that look at names: an identifier table (each name with its rule, where it
// applies and why), prefixes (cupti*, nvrtc*, curand* ...), the library verdict, the Python C API,
// and the qualified names by their root namespace (torch::, py::, std::, cub::, thrust:: ...).
#include <unordered_map>

#include "judge/static/source_scan.h"

namespace cuda_agent {
namespace {

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
        "changes the caller's current stream or uses the per-thread stream; launch on "
        "at::cuda::getCurrentCUDAStream() (a stream of your own must wait on it and be joined "
        "back before the call returns)",
        "cuStreamCreate cuStreamCreateWithPriority cudaStreamPerThread CU_STREAM_PER_THREAD "
        "getStreamFromExternal setCurrentCUDAStream CUDAStreamGuard OptionalCUDAStreamGuard "
        "CUDAMultiStreamGuard");
    add(kHostThread, Use::kName,
        "runs host work outside the call; do the work inside the call, on "
        "at::cuda::getCurrentCUDAStream()",
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
        "cudaDeviceReset cudaSetDeviceFlags cudaSetValidDevices "
        "cudaDeviceSetCacheConfig cudaDeviceSetSharedMemConfig cudaDeviceSetMemPool "
        "cudaMemPoolSetAttribute cudaDeviceSetGraphMemAttribute cudaThreadSetLimit "
        "cudaThreadSetCacheConfig cuCtxCreate cuCtxCreate_v2 cuCtxDestroy cuCtxSetCacheConfig "
        "cuDevicePrimaryCtxReset cuDevicePrimaryCtxSetFlags");
    add(kDeviceState, Use::kName,
        "changes the current device for the rest of the process; for the call's device use "
        "c10::cuda::CUDAGuard guard(x.device()), which restores it on return, or "
        "cudaSetDevice(x.get_device()) with an input tensor x",
        "cudaSetDevice cuCtxSetCurrent cuCtxPushCurrent cuCtxPopCurrent");
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
    add(kPythonApi, Use::kName,
        "defines or embeds a Python module; the workspace's binding.cpp defines cuda_extension: "
        "register your functions with REGISTER_BINDING (../binding_registry.h)",
        "PYBIND11_MODULE PYBIND11_EMBEDDED_MODULE PYBIND11_PLUGIN");
    add(kPythonApi, Use::kName, "is the Python C API; binding files need only m.def",
        "PyObject PyTypeObject PyThreadState PyFrameObject PyCodeObject PyInterpreterState");
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

// IsDeclaredName: the name at T[first] follows a type (int open(...)), so this is a
// declaration of a function of that name, not a use.
bool IsDeclaredName(const std::vector<Token>& T, size_t first) {
  if (first == 0) return false;
  const Token& before = T[first - 1];
  static const auto* keywords = new std::unordered_set<std::string>(
      WordSet("return else do case throw co_return co_await co_yield new delete"));
  if (before.IsIdent()) return !keywords->count(before.text);
  return before.IsPunct(">") || before.IsPunct("~");
}

// CheckStdName handles names below std:: (or unqualified ones after `using namespace std`).
void CheckStdName(SourceScan& s, const std::vector<std::string>& rest, int line,
                  const std::string& shown) {
  if (rest.empty()) return;
  static const auto* threads =
      new std::unordered_set<std::string>(WordSet("thread jthread async packaged_task launch"));
  static const auto* files = new std::unordered_set<std::string>(
      WordSet("ifstream ofstream fstream filebuf basic_ifstream basic_ofstream basic_fstream "
              "filesystem"));
  const std::string& first = rest.front();
  if (threads->count(first)) {
    s.Emit(kHostThread, line,
           shown +
               " runs host work outside the call; do the work inside the call, on "
               "at::cuda::getCurrentCUDAStream()");
  }
  if (files->count(first)) s.Emit(kFileIo, line, shown + " accesses files");
  if (first == "chrono") s.Emit(kClockRead, line, shown + " reads clocks");
}

bool DriverEntryPointIsTensorMap(const SourceScan& s, const std::vector<Token>& T, size_t i) {
  if (i + 2 >= T.size() || !T[i + 1].IsPunct("(") || T[i + 2].kind != TokenKind::kString) {
    return false;
  }
  std::string_view literal = s.src.Original(T[i + 2]);
  return StartsWith(literal, "\"cuTensorMapEncode");
}

void CheckName(SourceScan& s, const std::vector<Token>& T, const QualifiedName& q) {
  const std::string& last = q.parts.back();
  const std::string& root = q.parts.front();
  const int line = T[q.last].line;
  const bool qualified = q.parts.size() > 1;
  const bool free_use = !q.member && (!qualified || root == "std" || IsTorchRoot(root));
  const bool called = q.last + 1 < T.size() && T[q.last + 1].IsPunct("(");
  const std::string shown = "`" + Join(q.parts) + "`";

  if (last == "cudaGetDriverEntryPoint" || last == "cudaGetDriverEntryPointByVersion" ||
      last == "cuGetProcAddress" || last == "cuGetProcAddress_v2") {
    if (!q.member && !DriverEntryPointIsTensorMap(s, T, q.last)) {
      s.Emit(kDynamicLoading, line,
             shown + " may fetch only cuTensorMapEncode* (given as a string literal)");
    }
    return;
  }
  // cudaSetDevice(x.get_device()) / (x.device().index()): the input's own device, a no-op on the
  // current one (CheckSetDevice refuses it when x is not a tensor).
  if (!qualified && !q.member && SetDeviceReceiver(T, q.first) != 0) return;
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
      s.Emit(r.rule, line, shown + " " + r.why);
      return;
    }
  }
  if (!q.member && (!qualified || root == "std" || root == "cuda")) {
    for (const PrefixRule& p : kPrefixRules) {
      if (StartsWith(last, p.prefix)) {
        s.Emit(p.rule, line, shown + ": " + p.why + " is not allowed");
        return;
      }
    }
    if (std::string why = LibraryVerdict(last); !why.empty()) {
      s.Emit(kLibraryCompute, line, why);
      return;
    }
    if (IsPythonCApiName(last)) {
      s.Emit(kPythonApi, line, shown + " is the Python C API; binding files need only m.def");
      return;
    }
  }
  if (!qualified) {
    if (s.using_std && !q.member) CheckStdName(s, q.parts, line, shown);
    if (last == "chrono" && !q.member) s.Emit(kClockRead, line, shown + " reads clocks");
    return;
  }
  if (IsTorchRoot(root)) {
    if (!TorchNameAllowed(q.parts)) {
      s.Emit(kTorchCompute, line,
             shown +
                 " is not an allowed torch API in C++ (allowed: Tensor and dtype types, "
                 "torch::empty*/zeros*/ones*/full*, TensorOptions, the current stream, "
                 "device guards, TORCH_CHECK); compute in your own kernels");
    }
  } else if (root == "aten" || root == "caffe2") {
    s.Emit(kTorchCompute, line, shown + " is torch's internal API; compute in your own kernels");
  } else if (root == "py" || root == "pybind11") {
    std::vector<std::string> rest(q.parts.begin() + 1, q.parts.end());
    std::string path = Join(rest);
    if (!PybindAllowlist().count(path) && !StartsWith(path, "return_value_policy::")) {
      s.Emit(kPythonApi, line,
             shown + " reaches Python objects; binding files need only m.def and py::arg");
    }
  } else if (root == "std") {
    CheckStdName(s, std::vector<std::string>(q.parts.begin() + 1, q.parts.end()), line, shown);
  } else if (root == "cub") {
    if (StartsWith(q.parts[1], "Device") || StartsWith(q.parts[1], "Dispatch")) {
      s.Emit(kLibraryCompute, line,
             shown +
                 " is a device-wide cub algorithm (library kernels); block- and warp-level "
                 "cub primitives inside your kernels are fine");
    }
  } else if (root == "thrust" || root == "cutlass" || root == "cute") {
    s.Emit(kLibraryCompute, line, shown + ": " + root + " is not an allowed library");
  } else if (root == "cuda") {
    bool persisting = last == "persisting" &&
                      std::find(q.parts.begin(), q.parts.end(), "access_property") != q.parts.end();
    if (persisting) s.Emit(kL2Persistence, line, shown + " keeps data in L2 across calls");
    if (q.parts.size() > 2 && q.parts[1] == "std" && q.parts[2] == "chrono") {
      s.Emit(kClockRead, line, shown + " reads clocks");
    }
  } else if (root == "gnu") {
    static const auto* tricks = new std::unordered_set<std::string>(
        WordSet("constructor destructor section alias ifunc weak weakref"));
    if (tricks->count(last)) s.Emit(kLinkerTricks, line, shown + " changes what runs at load time");
  } else if (root == "chrono") {
    s.Emit(kClockRead, line, shown + " reads clocks");
  } else if (root == "filesystem") {
    s.Emit(kFileIo, line, shown + " accesses files");
  }
}

}  // namespace

// CheckNames applies the identifier, prefix, library and namespace rules to every name.
void CheckNames(SourceScan& s, const std::vector<Token>& T) {
  for (size_t i = 0; i < T.size(); ++i) {
    if (!StartsChain(T, i)) continue;
    QualifiedName q = ChainAt(T, i);
    CheckName(s, T, q);
    i = q.last;
  }
}

}  // namespace cuda_agent
