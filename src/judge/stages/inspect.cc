// inspect.cc — the inspect stage (CUDA): builder/binary_inspector reads the built extension's
// kernels and their machine code (SASS) while the candidate is verified — from each .cu file's fat
// binary, read during the build as soon as nvcc's device chain made it, where it can. The kernel
// audit needs the kernels' names, and in an fp32 task the `strict` policy refuses reduced-precision
// tensor-core instructions (HACKS B11, judge/precision).
#include "builder/extension_builder.h"
#include "judge/stages/stages.h"

namespace cuda_agent {

namespace {

// InspectionTools runs the inspection's tools (cuobjdump, nm) in a sandbox that reads the build
// folder only and has no GPU.
ToolRunner InspectionTools(Judgement& j) {
  JobSandbox box = j.Contain({j.dirs().build}, {});
  box.policy.gpu = false;
  return [&j, box](const RunOptions& o) -> Result<RunResult> {
    Result<SandboxRun> sr = j.sandbox().Run(box.policy, o);
    if (!sr.ok()) return sr.status();
    return std::move(sr->process);
  };
}

}  // namespace

void InspectDeviceCode(Judgement& j, const fs::path& fatbin) {
  if (j.options().device != Device::kCuda || j.cache_dir().empty()) return;
  ToolRunner run = InspectionTools(j);
  std::string cuda_home = j.toolchain().cuda_home;
  JudgementFacts& facts = j.facts();
  std::lock_guard<std::mutex> lock(facts.device_code_mu);
  facts.device_code_inspections.push_back(
      std::async(std::launch::async, [run, fatbin, cuda_home, cache = j.cache_dir()] {
        // A failure leaves nothing stored: the library is read whole instead.
        (void)InspectFatbinCached(fatbin, cuda_home, run, cache);
      }));
}

std::future<BinaryInspection> StartInspect(Judgement& j) {
  if (j.options().device != Device::kCuda) return {};
  ToolRunner run = InspectionTools(j);
  fs::path library = j.dirs().build / (std::string(kExtensionName) + ".so");
  std::string cuda_home = j.toolchain().cuda_home;
  return std::async(std::launch::async, [&j, run, library, cuda_home]() {
    auto t = Clock::now();
    {  // the build is over: no fat binary is handed over any more
      JudgementFacts& facts = j.facts();
      std::lock_guard<std::mutex> lock(facts.device_code_mu);
      for (std::future<void>& pending : facts.device_code_inspections) pending.wait();
    }
    BinaryInspection inspection = InspectExtensionCached(library, cuda_home, run, j.cache_dir());
    j.facts().inspect_seconds = SecondsSince(t);
    return inspection;
  });
}

Next FinishInspect(Judgement& j, std::future<BinaryInspection>& pending) {
  if (!pending.valid()) return Next::kContinue;
  JudgementFacts& facts = j.facts();
  JudgeResult& r = j.result();
  const JudgeOptions& opt = j.options();
  facts.inspection = pending.get();
  const BinaryInspection& inspection = facts.inspection;
  r.stage_seconds["inspect"] = facts.inspect_seconds;
  Json kernels = Json::array();
  for (const auto& k : inspection.kernels) {
    if (inspection.source == "sass")
      kernels.push_back({{"name", k.name}, {"tensor_core", TensorCoreOpcodes(k)}});
    facts.own_keys.insert(KernelKey(k.name));
  }
  r.build["inspection"] = {
      {"source", inspection.source}, {"note", inspection.note}, {"from", inspection.from}};
  if (inspection.source == "sass") r.build["kernels"] = kernels;
  for (const auto& key : facts.own_keys) {
    // The profile's stream-order fences are torch.cuda._sleep's spin_kernel, told apart by name.
    if (key.find("spin_kernel") != std::string::npos) {
      return j.Fail(Stage::kVerify, "kernel_audit",
                    "kernel audit: the name " + key +
                        " is reserved (the judge's stream-order fences "
                        "use spin_kernel); rename the kernel");
    }
  }
  if (!opt.policy.reject_reduced_precision_in_fp32 || !facts.Fp32Task()) return Next::kContinue;
  if (inspection.source != "sass") {
    facts.notes.push_back("machine-code precision check skipped: " + inspection.note);
    return Next::kContinue;
  }
  for (const auto& k : inspection.kernels) {
    std::vector<std::string> ops = TensorCoreOpcodes(k);
    if (ops.empty()) continue;
    return j.Fail(Stage::kVerify, "precision_downgrade",
                  "precision downgrade: kernel " + k.name + " uses " + ops.front() +
                      " (tensor-core instructions on half/TF32/int8 inputs) in an fp32 task; the " +
                      opt.policy.name +
                      " policy requires fp32 arithmetic (--policy tf32-fair allows TF32)");
  }
  return Next::kContinue;
}

}  // namespace cuda_agent
