// build.cc — the snapshot stage (only the candidate's files plus our binding files, for the
// harness) and the build stage: the candidate value compiled into cuda_extension.so by
// builder/extension_builder, linked with the CUDA libraries the static scan found; compiler output
// as file:line errors.
#include "builder/extension_builder.h"
#include "judge/stages/stages.h"

namespace cuda_agent {

Next WriteSnapshot(Judgement& j, const Candidate& candidate) {
  if (Status snap = candidate.WriteSnapshot(j.dirs().src, j.env().TemplateDir()); !snap.ok()) {
    return j.Internal(snap.message());
  }
  return Next::kContinue;
}

Next Build(Judgement& j, const Candidate& candidate) {
  const JudgeOptions& opt = j.options();
  JudgeResult& r = j.result();
  r.stage = Stage::kBuild;
  BuildRequest req;
  req.template_dir = j.env().TemplateDir();
  req.out_dir = j.dirs().build;
  req.cache_dir = j.cache_dir();
  req.libraries = j.facts().libraries;
  req.jobs = opt.build_jobs;
  req.timeout_seconds = opt.build_timeout_s;
  req.sandbox = &j.sandbox();
  req.policy = j.base_policy();
  req.policy.gpu = false;  // compilers need no GPU
  req.fast_math = opt.policy.fast_math;
  req.binding_clang = opt.binding_clang;
  // The machine code is inspected only for a judgement that goes on to verify (`build` alone
  // does not), each .cu's as soon as its device code exists.
  if (opt.until != Stage::kBuild) {
    req.on_device_code = [&j](const fs::path& fatbin) { InspectDeviceCode(j, fatbin); };
  }
  BuildReport built = BuildExtension(candidate, req, j.toolchain());
  Json steps = Json::array();
  for (const BuildStep& step : built.steps) {
    steps.push_back({{"name", step.name}, {"start_s", step.start_s}, {"seconds", step.seconds}});
  }
  Json errors = Json::array();
  for (const auto& e : built.errors) {
    errors.push_back({{"file", e.file},
                      {"line", e.line},
                      {"column", e.column},
                      {"message", e.message},
                      {"text", e.ToString()}});
  }
  r.build = {{"ok", built.ok},
             {"seconds", built.seconds},
             {"errors", errors},
             {"log_tail", built.log_tail},
             {"objects_compiled", built.objects_compiled},
             {"objects_cached", built.objects_cached},
             {"objects_split", built.objects_split},
             {"objects_clang", built.objects_clang},
             {"clang_fallbacks", built.clang_fallbacks},
             {"library_cached", built.library_cached},
             {"libraries", built.libraries},
             {"sources", built.sources},
             {"steps", steps}};
  r.stage_seconds["build"] = built.seconds;
  if (!built.ok) return j.Fail(Stage::kBuild, "build", "build failed: " + built.failure);
  if (opt.until != Stage::kBuild) return Next::kContinue;
  r.reason = "build succeeded";
  if (!opt.export_library.empty()) {
    std::error_code ec;
    if (opt.export_library.has_parent_path()) {
      fs::create_directories(opt.export_library.parent_path(), ec);  // --out into a new folder
    }
    fs::copy_file(built.library, opt.export_library, fs::copy_options::overwrite_existing, ec);
    if (ec) return j.Internal("cannot write " + opt.export_library.string() + ": " + ec.message());
    r.build["library"] = opt.export_library.string();
  }
  return Next::kStop;
}

}  // namespace cuda_agent
