// policy.cc — what a policy that lets torch compute (kernelbench, judge/precision.h PolicyRules)
// changes in the C++ scan: the torch-compute rules are off (SourceScan::Emit drops them), and
// backend_switch refuses what is still no kernel of the candidate's: torch's global switches
// (TF32, cuDNN benchmark, matmul precision, determinism), autocast, the JIT, torch's CUDA graphs,
// operator registration and the dispatcher's and allocator's internals; and torch's serialization
// (torch::load, pickle_load) stays file_io.
#include "judge/static/source_scan.h"

namespace cuda_agent {
namespace {

constexpr const char* kAllowedWay =
    "; under --policy kernelbench call torch's eager operators (torch::conv2d, at::matmul) with "
    "torch's default settings, or write the work as your own kernel";

// SwitchSetter: at::Context's setters of global backend settings (setAllowTF32CuBLAS,
// setBenchmarkCuDNN, setFloat32MatmulPrecision, setDeterministicCuDNN, setSDPUseFlash ...).
bool SwitchSetter(const std::string& name) {
  for (const char* prefix :
       {"setAllow", "setBenchmark", "setFloat32", "setDeterministic", "setUserEnabled", "setSDP",
        "setBlas", "setLinalg", "setQEngine", "setFlushDenormal", "setROCm", "setCheckSparse"}) {
    if (StartsWith(name, prefix)) return true;
  }
  return false;
}

// Why a name is refused under a torch-compute policy, or "".
std::string Refused(const QualifiedName& q) {
  const std::string& last = q.parts.back();
  if (StartsWith(last, "TORCH_LIBRARY")) return "registers operators in torch's dispatcher";
  if (last == "globalContext" || SwitchSetter(last))
    return "changes torch's global backend settings";
  if (!IsTorchRoot(q.parts.front()) || q.member) return "";
  for (size_t i = 1; i < q.parts.size(); ++i) {
    const std::string& p = q.parts[i];
    if (p == "jit" || p == "autocast" || p == "inductor" || p == "dynamo")
      return "is torch's compiler or autocast";
    if (p == "CUDAGraph" || p == "CUDAGeneratorImpl") return "is a torch CUDA graph";
    if (p == "impl" || p == "DispatchKey" || p == "DispatchKeySet" || p == "Dispatcher")
      return "reaches the dispatcher's internals";
    if (p == "CUDACachingAllocator" || p == "CachingAllocator")
      return "reaches torch's memory allocator";
    if (p == "Context") return "changes torch's global backend settings";
  }
  return "";
}

// ReadsFiles: torch's serialization API, which the torch_compute rule refused along with the rest
// of torch (torch::load, torch::pickle_load, torch::serialize::InputArchive, torch::from_file).
bool ReadsFiles(const QualifiedName& q) {
  if (!IsTorchRoot(q.parts.front()) || q.member) return false;
  for (size_t i = 1; i < q.parts.size(); ++i) {
    const std::string& p = q.parts[i];
    if (p == "load" || p == "save" || p == "serialize" || p == "pickle_load" ||
        p == "pickle_save" || p == "from_file" || p == "hub")
      return true;
  }
  return false;
}

}  // namespace

void CheckBackendSwitches(SourceScan& s) {
  const std::vector<Token>& T = s.src.tokens;
  for (size_t i = 0; i < T.size(); ++i) {
    if (!T[i].IsIdent() || !StartsChain(T, i)) continue;
    QualifiedName q = ChainAt(T, i);
    std::string why = Refused(q);
    if (!why.empty()) s.Emit(kBackendSwitch, T[i].line, Join(q.parts) + " " + why + kAllowedWay);
    if (ReadsFiles(q)) {
      s.Emit(kFileIo, T[i].line,
             Join(q.parts) +
                 " reads or writes files, where the harness keeps inputs and expected "
                 "outputs; torch's compute operators are allowed, its serialization is not");
    }
    i = q.last;
  }
}

}  // namespace cuda_agent
