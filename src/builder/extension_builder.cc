// extension_builder.cc — write the value's sources once, compile, cache, link.
#include "builder/extension_builder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "builder/binding_compiler.h"
#include "builder/link_stubs.h"
#include "builder/nvcc_plan.h"
#include "builder/precompiled_header.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/subprocess.h"

namespace cuda_agent {
namespace {

constexpr size_t kMaxErrors = 8;
constexpr size_t kMaxLogBytes = 16 * 1024;

using Clock = std::chrono::steady_clock;

// StepLog collects a build's BuildSteps from the threads that run them.
class StepLog {
 public:
  explicit StepLog(Clock::time_point start) : start_(start) {}
  // Add records `name` as having run from `began` until now.
  void Add(const std::string& name, Clock::time_point began) {
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    steps_.push_back({name, std::chrono::duration<double>(began - start_).count(),
                      std::chrono::duration<double>(now - began).count()});
  }
  // Timed runs `run` and records it as `name`; returns what it returned.
  template <typename Run>
  auto Timed(const std::string& name, Run&& run) {
    const auto began = Clock::now();
    auto out = run();
    Add(name, began);
    return out;
  }
  std::vector<BuildStep> Take() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::move(steps_);
  }

 private:
  Clock::time_point start_;
  std::mutex mutex_;
  std::vector<BuildStep> steps_;
};

bool IsHeader(const fs::path& p) {
  std::string ext = p.extension().string();
  return ext == ".h" || ext == ".hpp" || ext == ".cuh" || ext == ".inl" || ext == ".hxx";
}

// SourceDir: where the build's sources are written and compiled from.
fs::path SourceDir(const BuildRequest& req) { return req.out_dir / kBuildSourceFolder; }

// Sources: every file a build compiles or includes, by relative path: the candidate's kernels/
// files as the value holds them and the template's fixed binding files.
using Sources = std::map<std::string, std::string>;

// GatherSources takes the candidate's kernels/ files from the value and reads the template's fixed
// binding files (binding.cpp must be there; a missing header is left out).
Result<Sources> GatherSources(const Candidate& candidate, const fs::path& template_dir) {
  Sources files;
  for (const auto& [name, content] : candidate.files()) {
    if (name.starts_with("kernels/")) files[name] = content;
  }
  for (const char* name : kInfrastructureFiles) {
    std::error_code ec;
    const bool required = std::string_view(name) == kBindingSource;
    if (!required && !fs::exists(template_dir / name, ec)) continue;
    Result<std::string> content = ReadFile(template_dir / name);
    if (!content.ok()) {
      return Internal("the template has no readable " + std::string(name) + " (" +
                      content.status().message() + ")");
    }
    files[name] = std::move(content).value();
  }
  return files;
}

// WriteSources empties `dir` and writes `files` into it: the only copy the compilers read.
Status WriteSources(const Sources& files, const fs::path& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) return Internal("cannot empty " + dir.string() + ": " + ec.message());
  for (const auto& [name, content] : files) {
    fs::create_directories((dir / name).parent_path(), ec);
    if (ec) return Internal("cannot create " + (dir / name).parent_path().string());
    if (Status s = WriteFileAtomic(dir / name, content); !s.ok()) return s;
  }
  return OkStatus();
}

std::vector<std::string> CommonFlags(const BuildRequest& req, const Toolchain& tc) {
  std::vector<std::string> flags = {
      "-DTORCH_EXTENSION_NAME=" + std::string(kExtensionName), "-DTORCH_API_INCLUDE_EXTENSION_H",
      std::string("-D_GLIBCXX_USE_CXX11_ABI=") + (tc.cxx11_abi ? "1" : "0"),
      "-I" + SourceDir(req).string()};
  for (const auto& dir : tc.include_dirs) {
    flags.push_back("-isystem");
    flags.push_back(dir);
  }
  if (!tc.python_include.empty()) {
    flags.push_back("-isystem");
    flags.push_back(tc.python_include);
  }
  return flags;
}

// The flag lists without folder names, for cache keys.
std::string KeyFlags(const std::vector<std::string>& flags, const std::string& source_dir) {
  std::string key;
  for (const auto& f : flags) key += StripPrefixEverywhere(f, source_dir) + "\x1f";
  return key;
}

struct CompileStep {
  fs::path source;  // relative
  fs::path object;  // absolute, in out_dir
  std::vector<std::string> argv;
  std::string cache_key;
  fs::path pch_dir;   // the precompiled header this step includes, if any
  bool cuda = false;  // nvcc compiles it
  // When clang compiles a binding file (builder/binding_compiler.h): g++'s command, without its
  // precompiled header (looked up when it is needed) and without source and output.
  std::vector<std::string> fallback_argv;
  // g++'s object of the same file, when one is cached (made before clang's header was ready): used
  // rather than compiling the unchanged file again.
  std::string fallback_cache_key;
  PchVariant variant = PchVariant::kNone;
};

std::string NvccPath(const Toolchain& tc) {
  if (!tc.cuda_home.empty() && fs::exists(fs::path(tc.cuda_home) / "bin" / "nvcc")) {
    return (fs::path(tc.cuda_home) / "bin" / "nvcc").string();
  }
  return "nvcc";
}

// PchFlags: a compile command as its precompiled header is made with (no -c, no own include).
std::vector<std::string> PchFlags(const std::vector<std::string>& argv, const BuildRequest& req) {
  std::vector<std::string> flags;
  const std::string own_include = "-I" + SourceDir(req).string();
  for (const auto& a : argv) {
    if (a != "-c" && a != own_include) flags.push_back(a);
  }
  return flags;
}

// WithSource: `argv` with a precompiled header (when `pch_dir` is set), the source and the output.
std::vector<std::string> WithSource(std::vector<std::string> argv, const fs::path& pch_dir,
                                    PchCompiler compiler, const fs::path& source,
                                    const fs::path& object) {
  if (!pch_dir.empty()) {
    for (std::string& flag : PchIncludeFlags(pch_dir, compiler)) argv.push_back(std::move(flag));
  }
  argv.insert(argv.end(), {source.string(), "-o", object.string()});
  return argv;
}

CompileStep MakeStep(const BuildRequest& req, const Toolchain& tc, const fs::path& rel,
                     const std::string& content, const std::string& headers_hash) {
  CompileStep step;
  step.source = rel;
  std::string stem = rel.generic_string();
  std::replace(stem.begin(), stem.end(), '/', '_');
  step.object = req.out_dir / (stem + ".o");
  std::vector<std::string> flags = CommonFlags(req, tc);
  bool cuda = rel.extension() == ".cu";
  step.cuda = cuda;
  if (cuda) {
    step.argv = {
        NvccPath(tc), "-c", "-O3", "-std=c++17", "--expt-relaxed-constexpr", "-Xcompiler", "-fPIC",
        // The defaults of torch's extension loader, which published candidates were built with.
        "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
        "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__", "-gencode",
        CudaGencode(tc.gpu ? tc.gpu->capability : "9.0")};
    // Approximate tanh/exp/division and flushed denormals, as published; off under the strict
    // precision policies (docs/precision.md).
    if (req.fast_math) step.argv.insert(step.argv.begin() + 3, "--use_fast_math");
  } else if (tc.device == Device::kCuda) {
    flags.push_back("-DCUDA_AGENT_DEVICE_CUDA");  // binding.cpp's plain::current_stream
    if (!tc.cuda_home.empty()) {
      flags.push_back("-isystem");
      flags.push_back((fs::path(tc.cuda_home) / "include").string());
    }
  }
  if (!cuda) step.argv = {"g++", "-c", "-O3", "-std=c++20", "-fPIC", "-w"};
  step.argv.insert(step.argv.end(), flags.begin(), flags.end());
  // A binding file: its torch/pybind11 headers from a precompiled header, once it is made (the
  // object is the same either way, so the cache key does not depend on it).
  step.variant = !cuda ? PchVariantFor(content) : PchVariant::kNone;
  PchCompiler compiler = PchCompiler::kGcc;
  std::string compiler_version;
  std::optional<BindingClang> clang;
  // A candidate's binding file goes to clang once clang's precompiled header is ready (until then,
  // and for the fixed binding.cpp, compiled once per toolchain, g++).
  if (step.variant != PchVariant::kNone) clang = FindBindingClang(req.binding_clang);
  if (clang && rel != kBindingSource) {
    std::vector<std::string> argv = {clang->path,  "-c",    BindingOptimization(tc.device),
                                     "-std=c++20", "-fPIC", "-w"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    bool failed = false;
    if (std::optional<fs::path> pch =
            PrecompiledHeader(req.cache_dir, PchFlags(argv, req), tc, step.variant,
                              PchCompiler::kClang, true, &failed)) {
      step.fallback_argv = std::move(step.argv);
      step.argv = std::move(argv);
      step.pch_dir = *pch;
      compiler = PchCompiler::kClang;
      compiler_version = clang->version;
    } else if (failed) {
      static std::once_flag warned;
      std::call_once(warned, [&] {
        LogWarn(clang->path + " could not precompile torch's headers (its log.txt is in the " +
                "cache's pch folder); binding files are compiled with g++");
      });
      clang.reset();
    }
  }
  auto cache_key = [&](const std::vector<std::string>& argv, const std::string& version) {
    return Sha256Hex(KeyFlags(argv, SourceDir(req).string()) + "|" + version + "|" +
                     tc.Fingerprint() + "|" + headers_hash + "|" + content);
  };
  step.cache_key = cache_key(step.argv, compiler_version);
  if (!step.fallback_argv.empty()) step.fallback_cache_key = cache_key(step.fallback_argv, "");
  if (step.variant != PchVariant::kNone && step.pch_dir.empty()) {
    // g++'s own header is made only where g++ is the binding files' compiler (with clang it serves
    // a fallback only, and is made when one happens).
    std::optional<fs::path> pch = PrecompiledHeader(req.cache_dir, PchFlags(step.argv, req), tc,
                                                    step.variant, PchCompiler::kGcc, !clang);
    if (pch) step.pch_dir = *pch;
  }
  step.argv =
      WithSource(std::move(step.argv), step.pch_dir, compiler, SourceDir(req) / rel, step.object);
  return step;
}

// HashHeaders hashes the headers a source may include: for the fixed binding.cpp only the
// infrastructure headers beside it (it includes nothing of kernels/, so a candidate's header edit
// does not compile it again), for a kernel file every header. In path order, as a listing of the
// written folder would give them (the keys of earlier builds stay valid).
std::string HashHeaders(const Sources& files, bool infrastructure_only) {
  std::vector<std::pair<fs::path, const std::string*>> headers;
  for (const auto& [name, content] : files) {
    const fs::path rel(name);
    if (!IsHeader(rel)) continue;
    if (infrastructure_only && rel.has_parent_path()) continue;
    headers.emplace_back(rel, &content);
  }
  std::sort(headers.begin(), headers.end());
  Sha256 h;
  for (const auto& [rel, content] : headers) {
    h.Update(rel.generic_string());
    h.Update(*content);
  }
  return h.HexDigest();
}

bool CopyIntoCache(const fs::path& object, const fs::path& cached) {
  std::error_code ec;
  fs::create_directories(cached.parent_path(), ec);
  fs::path tmp = cached;
  tmp += ".tmp" + std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  fs::copy_file(object, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(tmp, cached, ec);
  return !ec;
}

// RunTool runs one compiler or linker invocation, contained when the request says so (`also` is
// read-only besides the sources: a precompiled header, the link stubs).
Result<RunResult> RunTool(const BuildRequest& req, RunOptions opt, const fs::path& also = {}) {
  opt.env_allow = JudgedEnvironment();  // the compiler reads the candidate's sources
  if (req.sandbox == nullptr) return RunProcess(opt);
  SandboxPolicy policy = req.policy;
  policy.keep_host_uid = true;  // the compilers write out_dir at once (sandbox/sandbox.h)
  policy.writable.push_back(req.out_dir);
  policy.read_only.push_back(SourceDir(req));
  if (!also.empty()) policy.read_only.push_back(also);
  Result<SandboxRun> run = req.sandbox->Run(policy, opt);
  if (!run.ok()) return run.status();
  return std::move(run->process);
}

// CleanUp removes a split compile's intermediate files and passes its result on.
Result<RunResult> CleanUp(const fs::path& keep, Result<RunResult> result) {
  std::error_code ec;
  fs::remove_all(keep, ec);
  return result;
}

// HandOverDeviceCode gives BuildRequest::on_device_code the fat binary nvcc's device chain wrote
// into `keep`, copied into out_dir/.device_code (the chain's folder is removed after the host
// compile, which the receiver does not wait for).
void HandOverDeviceCode(const BuildRequest& req, const fs::path& keep, const fs::path& object) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(keep, ec)) {
    if (entry.path().extension() != ".fatbin") continue;
    fs::path copy = req.out_dir / ".device_code" / (object.stem().string() + ".fatbin");
    fs::create_directories(copy.parent_path(), ec);
    if (!fs::copy_file(entry.path(), copy, fs::copy_options::overwrite_existing, ec) || ec) return;
    req.on_device_code(copy);
    return;
  }
}

// CompileCudaSplit compiles one .cu file with nvcc's own commands, its host front end and its
// device chain at once, then the host compile. nullopt: nvcc's dryrun did not have the shape a plan
// needs, and nvcc itself should compile the file. The chains' intermediate files go to a folder of
// their own in out_dir, removed afterwards.
std::optional<Result<RunResult>> CompileCudaSplit(const BuildRequest& req, const CompileStep& step,
                                                  const RunOptions& base, StepLog& log) {
  const std::string source = step.source.generic_string();
  fs::path keep = req.out_dir / ".nvcc" / step.object.stem();
  std::error_code ec;
  fs::remove_all(keep, ec);
  fs::create_directories(keep, ec);
  auto unplanned = [&](const std::string& why) -> std::optional<Result<RunResult>> {
    static std::once_flag warned;
    std::call_once(warned, [&] {
      LogWarn("nvcc's phases cannot run side by side (" + why + "); nvcc runs them in turn");
    });
    fs::remove_all(keep, ec);
    return std::nullopt;
  };
  RunOptions listing = base;
  listing.argv.insert(listing.argv.end(), {"-dryrun", "-keep", "--keep-dir", keep.string()});
  Result<RunResult> listed =
      log.Timed(source + ": nvcc -dryrun", [&] { return RunTool(req, listing); });
  if (!listed.ok()) return unplanned(listed.status().message());
  if (!listed->Succeeded()) return unplanned("nvcc -dryrun: " + listed->Describe());
  Result<NvccPlan> plan = PlanNvcc(listed->err + listed->out);
  if (!plan.ok()) return unplanned(plan.status().message());
  fs::path id_file = fs::path(base.cwd) / plan->module_id_file;  // unchanged when absolute
  Status written =
      WriteFileAtomic(id_file, NvccModuleId(step.source.filename().string(), step.cache_key));
  if (!written.ok()) return unplanned(written.message());

  auto run_chain = [&](const std::string& name, const std::vector<CommandLine>& commands) {
    RunOptions opt = base;
    opt.argv = {"/bin/sh", "-c", ShellScript(commands)};
    opt.env_set.insert(opt.env_set.end(), plan->env.begin(), plan->env.end());
    return log.Timed(source + ": " + name, [&] { return RunTool(req, opt); });
  };
  std::optional<Result<RunResult>> device;
  std::thread device_thread([&] {
    device.emplace(run_chain("device chain", plan->device_chain));
    if (req.on_device_code && device->ok() && (*device)->Succeeded()) {
      HandOverDeviceCode(req, keep, step.object);  // without waiting for the host chain
    }
  });
  Result<RunResult> host = run_chain("host chain", plan->host_chain);
  device_thread.join();
  // A front-end error is reported by cudafe++ and again by cicc: the host chain's report comes
  // first, and the device chain's only when the host chain succeeded (ptxas's errors, say).
  if (!host.ok() || !host->Succeeded()) return CleanUp(keep, std::move(host));
  if (!device->ok() || !(*device)->Succeeded()) return CleanUp(keep, std::move(*device));
  return CleanUp(keep, run_chain("host compile", {plan->host_compile}));
}

// CompileWithGcc compiles a binding file clang did not (builder/binding_compiler.h): g++ decides,
// with its precompiled header when that is made (and starts making it when not).
Result<RunResult> CompileWithGcc(const BuildRequest& req, const CompileStep& step, RunOptions opt,
                                 const Toolchain& tc, StepLog& log) {
  std::optional<fs::path> pch = PrecompiledHeader(req.cache_dir, PchFlags(step.fallback_argv, req),
                                                  tc, step.variant, PchCompiler::kGcc);
  fs::path pch_dir = pch ? *pch : fs::path();
  opt.argv = WithSource(step.fallback_argv, pch_dir, PchCompiler::kGcc,
                        SourceDir(req) / step.source, step.object);
  return log.Timed(step.source.generic_string() + ": g++ after clang failed",
                   [&] { return RunTool(req, opt, pch_dir); });
}

}  // namespace

std::string CudaGencode(const std::string& capability) {
  std::string digits;
  for (char c : capability) {
    if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
  }
  if (digits.empty()) digits = "90";
  // Hopper's arch-specific features (wgmma, TMA) need the "a" target; the GPU we run on is known.
  std::string suffix = (digits == "90" || digits == "100" || digits == "120") ? "a" : "";
  return "arch=compute_" + digits + suffix + ",code=sm_" + digits + suffix;
}

Result<std::vector<fs::path>> CollectSources(const Candidate& candidate, Device device) {
  std::vector<fs::path> sources = {kBindingSource};
  std::vector<fs::path> kernel_sources;
  for (const auto& [name, content] : candidate.files()) {
    if (name.starts_with("kernels/")) kernel_sources.emplace_back(name);
  }
  std::sort(kernel_sources.begin(), kernel_sources.end());  // path order, as a listing gave them
  std::erase_if(kernel_sources, [](const fs::path& rel) {
    const std::string ext = rel.extension().string();
    return ext != ".cu" && ext != ".cpp" && ext != ".cc";
  });
  for (const fs::path& rel : kernel_sources) {
    if (rel.extension() == ".cu" && device == Device::kCpu) {
      return InvalidArgument(rel.generic_string() +
                             ": CUDA sources cannot be built in cpu mode (write kernels/*.cpp)");
    }
  }
  if (kernel_sources.empty()) {
    return InvalidArgument(std::string("no kernel sources: kernels/ holds no ") +
                           (device == Device::kCuda ? ".cu or .cpp" : ".cpp") + " files");
  }
  sources.insert(sources.end(), kernel_sources.begin(), kernel_sources.end());
  return sources;
}

std::vector<std::string> LinkedLibraries(Device device, const CudaLibraries& libraries) {
  std::vector<std::string> names = {"c10", "torch", "torch_cpu", "torch_python"};
  if (device != Device::kCuda) return names;
  names.insert(names.end(), {"c10_cuda", "torch_cuda", "cudart"});
  for (std::string& name : LinkNames(libraries)) names.push_back(std::move(name));
  return names;
}

BuildReport BuildExtension(const Candidate& candidate, const BuildRequest& req,
                           const Toolchain& tc) {
  const auto start = Clock::now();
  BuildReport report;
  StepLog log(start);
  auto finish = [&](BuildReport& r) -> BuildReport {
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    r.steps = log.Take();
    return r;
  };
  Result<std::vector<fs::path>> sources = CollectSources(candidate, tc.device);
  if (!sources.ok()) {
    report.failure = sources.status().message();
    return finish(report);
  }
  Result<Sources> files = GatherSources(candidate, req.template_dir);
  if (!files.ok()) {
    report.failure = files.status().message();
    return finish(report);
  }
  std::error_code ec;
  fs::create_directories(req.out_dir, ec);
  if (Status written = WriteSources(files.value(), SourceDir(req)); !written.ok()) {
    report.failure = "cannot write the sources: " + written.message();
    return finish(report);
  }
  std::string headers_hash = HashHeaders(files.value(), false);
  std::string infrastructure_hash = HashHeaders(files.value(), true);
  std::vector<CompileStep> steps;
  for (const fs::path& rel : sources.value()) {
    steps.push_back(MakeStep(req, tc, rel, files->at(rel.generic_string()),
                             rel == kBindingSource ? infrastructure_hash : headers_hash));
    report.sources.push_back(rel.generic_string());
  }

  // Compile in parallel; each worker takes the next step.
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::vector<std::pair<size_t, std::string>> failures;  // step index, output
  std::string launch_error;
  int jobs = req.jobs > 0 ? req.jobs : std::max(1u, std::thread::hardware_concurrency());
  auto worker = [&] {
    for (size_t i = next++; i < steps.size(); i = next++) {
      const CompileStep& step = steps[i];
      const std::string source = step.source.generic_string();
      const auto began = Clock::now();
      auto cached_object = [&](const std::string& key) {
        return req.cache_dir.empty() || key.empty() ? fs::path()
                                                    : req.cache_dir / "objects" / (key + ".o");
      };
      fs::path cached = cached_object(step.cache_key);
      bool reused = false;
      for (const fs::path& object : {cached, cached_object(step.fallback_cache_key)}) {
        std::error_code wec;
        if (object.empty() || !fs::exists(object, wec)) continue;
        fs::copy_file(object, step.object, fs::copy_options::overwrite_existing, wec);
        if (!wec) {
          reused = true;
          break;
        }
      }
      if (reused) {
        log.Add(source + ": cached", began);
        std::lock_guard<std::mutex> lock(mutex);
        ++report.objects_cached;
        continue;
      }
      RunOptions opt;
      opt.argv = step.argv;
      opt.cwd = SourceDir(req).string();
      opt.timeout_seconds = req.timeout_seconds;
      opt.max_output_bytes = 256 * 1024;
      std::optional<Result<RunResult>> split;
      if (step.cuda && req.split_nvcc) split = CompileCudaSplit(req, step, opt, log);
      const bool clang = !step.fallback_argv.empty();
      Result<RunResult> run = split ? std::move(*split)
                                    : log.Timed(source + (clang ? ": clang" : ": compile"),
                                                [&] { return RunTool(req, opt, step.pch_dir); });
      const bool fell_back = clang && (!run.ok() || !run->Succeeded());
      if (fell_back) run = CompileWithGcc(req, step, opt, tc, log);
      std::lock_guard<std::mutex> lock(mutex);
      if (split) ++report.objects_split;
      if (clang && !fell_back) ++report.objects_clang;
      if (fell_back) ++report.clang_fallbacks;
      if (!run.ok()) {
        launch_error = run.status().message();
        continue;
      }
      if (!run->Succeeded()) {
        std::string out = run->err + run->out;
        if (run->timed_out || run->term_signal)
          out += "\n" + step.source.generic_string() + ": compiler " + run->Describe();
        failures.emplace_back(i, out);
        continue;
      }
      ++report.objects_compiled;
      if (!cached.empty() && !CopyIntoCache(step.object, cached)) {
        LogWarn("cannot store " + step.source.generic_string() + " in the object cache");
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min<int>(jobs, static_cast<int>(steps.size())); ++t) {
    threads.emplace_back(worker);
  }
  for (auto& t : threads) t.join();

  std::string strip = SourceDir(req).string() + "/";
  if (!launch_error.empty()) {
    report.failure = "cannot run the compiler: " + launch_error;
    return finish(report);
  }
  if (!failures.empty()) {
    std::sort(failures.begin(), failures.end());
    std::string log;
    for (const auto& [index, out] : failures) log += out;
    report.errors = ParseCompilerErrors(log, strip, kMaxErrors);
    log = StripPrefixEverywhere(log, strip);
    report.log_tail = log.size() > kMaxLogBytes ? log.substr(0, kMaxLogBytes) + "\n[...]" : log;
    std::string first = steps[failures.front().first].source.generic_string();
    report.failure = report.errors.empty() ? "compilation of " + first + " failed"
                                           : report.errors.front().ToString();
    return finish(report);
  }

  // Link.
  report.library = req.out_dir / (std::string(kExtensionName) + ".so");
  RunOptions link;
  link.argv = {"g++", "-shared", "-o", report.library.string()};
  for (const auto& step : steps) link.argv.push_back(step.object.string());
  // Torch's libraries, and on CUDA the ones the static scan found the candidate uses (cuBLAS for
  // GEMM and cuDNN for convolution are the ones the rules allow).
  const std::vector<std::string> libraries = LinkedLibraries(tc.device, req.libraries);
  if (tc.device == Device::kCuda) report.libraries = LinkNames(req.libraries);
  // Against stubs of the libraries where it can (builder/link_stubs.h), the real ones' folders in
  // the rpath either way.
  std::optional<fs::path> stubs = LinkStubs(req.cache_dir, libraries, tc.library_dirs);
  if (stubs) link.argv.push_back("-L" + stubs->string());
  for (const auto& dir : tc.library_dirs) {
    if (!stubs) link.argv.push_back("-L" + dir);
    link.argv.push_back("-Wl,-rpath," + dir);
  }
  if (stubs) link.argv.push_back("-Wl,--no-as-needed");
  for (const std::string& library : libraries) link.argv.push_back("-l" + library);
  if (stubs) link.argv.push_back("-Wl,--as-needed");
  link.cwd = req.out_dir.string();
  link.timeout_seconds = req.timeout_seconds;
  // An unchanged candidate is not linked again: the library is cached under the objects' keys.
  Sha256 link_key;
  for (const auto& step : steps) link_key.Update(step.cache_key + "|");
  for (const auto& a : link.argv)
    link_key.Update(StripPrefixEverywhere(a, req.out_dir.string()) + "\x1f");
  fs::path cached_library = req.cache_dir.empty()
                                ? fs::path()
                                : req.cache_dir / "libraries" / (link_key.HexDigest() + ".so");
  if (!cached_library.empty() && fs::exists(cached_library, ec)) {
    const auto began = Clock::now();
    fs::copy_file(cached_library, report.library, fs::copy_options::overwrite_existing, ec);
    if (!ec) {
      log.Add("link: cached", began);
      report.library_cached = true;
      report.ok = true;
      return finish(report);
    }
  }
  Result<RunResult> linked =
      log.Timed("link", [&] { return RunTool(req, link, stubs.value_or(fs::path())); });
  if (!linked.ok() || !linked->Succeeded()) {
    std::string out = linked.ok() ? linked->err + linked->out : linked.status().message();
    report.errors = ParseCompilerErrors(out, strip, kMaxErrors);
    report.log_tail = StripPrefixEverywhere(out, strip).substr(0, kMaxLogBytes);
    report.failure = "link failed" +
                     (report.errors.empty() ? std::string() : ": " + report.errors.front().message);
    return finish(report);
  }
  if (!cached_library.empty() && !CopyIntoCache(report.library, cached_library)) {
    LogWarn("cannot store the linked extension in the cache");
  }
  report.ok = true;
  return finish(report);
}

}  // namespace cuda_agent
