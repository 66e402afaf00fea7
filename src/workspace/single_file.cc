// single_file.cc — KernelBench's single-file solutions through the harness's converter
// (single_file.h).
#include "workspace/single_file.h"

#include "common/subprocess.h"

namespace cuda_agent {
namespace {

constexpr const char* kConverter = "cuda_agent_harness.single_file";
constexpr double kConvertTimeoutSeconds = 60;

}  // namespace

std::optional<fs::path> SingleFileOf(const fs::path& candidate) {
  std::error_code ec;
  if (fs::is_regular_file(candidate, ec)) {
    if (candidate.extension() == ".py") return candidate;
    return std::nullopt;
  }
  if (!fs::is_directory(candidate, ec) || fs::exists(candidate / "kernels", ec))
    return std::nullopt;
  std::optional<fs::path> found;
  for (const fs::directory_entry& entry : fs::directory_iterator(candidate, ec)) {
    if (!entry.is_regular_file(ec) || entry.path().extension() != ".py") continue;
    if (found) return std::nullopt;  // more than one: not a single-file solution
    found = entry.path();
  }
  return found;
}

Result<SingleFileConversion> ConvertSingleFile(const HarnessEnv& env, const fs::path& file,
                                               const fs::path& out_dir) {
  RunOptions options;
  options.argv = {
      env.python, "-m", kConverter, fs::absolute(file).string(), fs::absolute(out_dir).string(),
      "--json"};
  // The converter needs the standard library and the harness only.
  options.env_set = {"PYTHONPATH=" + (env.home / "python").string(), "PYTHONDONTWRITEBYTECODE=1"};
  options.timeout_seconds = kConvertTimeoutSeconds;
  Result<RunResult> run = RunProcess(options);
  if (!run.ok()) return run.status();
  // Exit 0: converted; 2: refused. Either way the report is on stdout.
  if (run->timed_out || run->term_signal != 0 || (run->exit_code != 0 && run->exit_code != 2)) {
    return Internal("python -m " + std::string(kConverter) + " failed (" + run->Describe() +
                    "): " + run->err);
  }
  Result<Json> report = ParseJson(run->out, std::string(kConverter) + "'s report");
  if (!report.ok()) return Internal(report.status().message() + "; stderr: " + run->err);
  const Json& r = report.value();
  SingleFileConversion c;
  try {
    c.ok = r.value("ok", false);
    if (r.contains("error") && r["error"].is_string()) c.error = r["error"];
    if (r.contains("line") && r["line"].is_number_integer()) c.line = r["line"];
    for (const Json& note : r.value("notes", Json::array())) c.notes.push_back(note);
    for (const Json& rel : r.value("files", Json::array())) c.files.push_back(rel);
  } catch (const Json::exception& e) {
    return Internal(std::string(kConverter) + "'s report is malformed: " + e.what());
  }
  if (!c.ok && c.error.empty()) c.error = file.string() + ": refused without a reason";
  return c;
}

Result<SingleFileCandidate> CandidateFromSingleFile(const HarnessEnv& env, const fs::path& file) {
  std::error_code ec;
  Result<fs::path> dir = MakeTempDir(fs::temp_directory_path(ec), "cuda-agent-single-file-");
  if (!dir.ok()) return dir.status();
  SingleFileCandidate out;
  Result<SingleFileConversion> conversion = ConvertSingleFile(env, file, dir.value());
  Status status = conversion.status();
  if (conversion.ok()) {
    out.conversion = std::move(conversion).value();
    if (out.conversion.ok) {
      Result<Candidate> candidate = Candidate::FromFolder(dir.value());
      status = candidate.status();
      if (candidate.ok()) out.candidate = std::move(candidate).value();
    }
  }
  fs::remove_all(dir.value(), ec);
  if (!status.ok()) return status;
  return out;
}

Json SingleFileJson(const fs::path& file, const SingleFileConversion& conversion) {
  Json out = {{"file", file.string()}, {"notes", conversion.notes}, {"files", conversion.files}};
  if (!conversion.ok) {
    out["error"] = conversion.error;
    if (conversion.line > 0) out["line"] = conversion.line;
  }
  return out;
}

}  // namespace cuda_agent
