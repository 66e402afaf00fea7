// kernelbench_solver.cc — `--solver kernelbench:<dir>`: KernelBench's own outputs (a run folder of
// its generation scripts, or the public leaderboard) as single-file candidates, mapped to the
// suite's tasks by level and problem number (kernelbench_layout.h). Which sample of a problem is
// judged: --sample (SolverContext::sample): an id (0 by default, as KernelBench's fast_p), a
// leaderboard model, or best (every sample judged, the best kept).
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "eval/kernelbench_layout.h"
#include "eval/solver.h"

namespace cuda_agent {
namespace {

std::string Join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string ProblemText(int level, int problem) {
  return "level " + std::to_string(level) + " problem " + std::to_string(problem);
}

class KernelBenchSolver : public Solver {
 public:
  KernelBenchSolver(fs::path dir, std::string sample)
      : dir_(std::move(dir)), sample_(sample.empty() ? "0" : std::move(sample)) {
    if (IsSampleId(sample_)) sample_ = std::to_string(std::stol(sample_));  // "00" is sample 0
    Result<KernelBenchLayout> scanned = ScanKernelBenchDir(dir_);
    if (!scanned.ok()) {
      scan_ = scanned.status();
      return;
    }
    layout_ = std::move(scanned).value();
    for (const KernelBenchFile& f : layout_.files) {
      by_problem_[{f.level, f.problem}].push_back(f);
      samples_.insert(f.sample);
    }
  }

  std::string Spec() const override {
    return "kernelbench:" + dir_.string() + " sample=" + sample_;
  }

  Status Check() const override {
    if (!scan_.ok()) return scan_;
    if (layout_.files.empty()) {
      return NotFound(
          "no KernelBench solution in " + dir_.string() +
          ": expected a run folder of level_L_problem_P_sample_S_kernel.py (generate_samples.py) "
          "or generated_kernel_level_L_problem_P.py (generate_and_eval_single_sample.py), or the "
          "leaderboard's docs/assets/raw_data.json with solutions/");
    }
    std::vector<std::string> present;
    for (const std::string& s : SortedSamples()) present.push_back(s);
    const bool leaderboard = layout_.layout == "leaderboard";
    if (sample_ == "best") return OkStatus();
    if (leaderboard && !samples_.count(sample_)) {
      return InvalidArgument(
          "--sample: the leaderboard's solutions are per model: --sample MODEL (one of " +
          Join(present, ", ") + ") or --sample best (every model's judged, the best kept)");
    }
    if (!leaderboard && !IsSampleId(sample_)) {
      return InvalidArgument("--sample: a sample id of the run (" + Join(present, ", ") +
                             "; KernelBench's fast_p takes 0) or best, got '" + sample_ + "'");
    }
    return OkStatus();
  }

  Solution Solve(const Task& task) override {
    const auto [level, problem] = KernelBenchProblemOf(task.level, task.name);
    auto it = by_problem_.find({level, problem});
    if (level == 0 || it == by_problem_.end()) {
      return {{},
              "no candidate: " + dir_.string() + " has no file for " +
                  (level == 0 ? task.name + " (not a KernelBench task name)"
                              : ProblemText(level, problem) +
                                    (layout_.layout == "leaderboard"
                                         ? ""
                                         : " (level_" + std::to_string(level) + "_problem_" +
                                               std::to_string(problem) + "_sample_" + sample_ +
                                               "_kernel.py)")),
              "",
              {}};
    }
    const std::vector<KernelBenchFile>& files = it->second;
    if (std::string why = Replaced(files, task.code); !why.empty())
      return {{}, "no candidate: " + why, "", {}};
    if (sample_ == "best") {
      Solution s{{}, "best of " + std::to_string(files.size()) + " samples", "", {}};
      for (const KernelBenchFile& f : files) s.samples.push_back({f.sample, f.path});
      return s;
    }
    std::vector<std::string> others;
    for (const KernelBenchFile& f : files) {
      if (f.sample == sample_) {
        return {f.path,
                "sample " + sample_ + " of " + std::to_string(files.size()) + ": " +
                    f.path.filename().string(),
                sample_,
                {}};
      }
      others.push_back(f.sample);
    }
    return {{},
            "no candidate: " + ProblemText(level, problem) + " has no sample " + sample_ +
                " (it has " + Join(others, ", ") + "; --sample best judges them all)",
            "",
            {}};
  }

  SolverInventory Inventory(const std::vector<Task>& suite) const override {
    SolverInventory inv;
    if (!scan_.ok()) return inv;
    std::set<std::pair<int, int>> tasks;
    for (const Task& t : suite) {
      std::pair<int, int> key = KernelBenchProblemOf(t.level, t.name);
      if (key.first != 0) tasks.insert(key);
    }
    for (const UnusedFile& u : layout_.unused)
      inv.unused.push_back({{"file", u.path.string()}, {"reason", u.reason}});
    std::set<int> levels;
    int mapped_problems = 0, judged = 0;
    std::map<std::pair<int, int>, const Task*> task_of;
    for (const Task& t : suite) task_of[KernelBenchProblemOf(t.level, t.name)] = &t;
    for (const auto& [key, files] : by_problem_) {
      if (tasks.count(key)) {
        if (std::string why = Replaced(files, task_of[key]->code); !why.empty()) {
          for (const KernelBenchFile& f : files)
            inv.unused.push_back({{"file", f.path.string()}, {"reason", why}});
          continue;
        }
      }
      if (!tasks.count(key)) {
        const std::string why =
            tasks.empty() ? "the suite has no KernelBench task names (levelL/P_Name.py) to map to"
                          : "the suite has no task for " + ProblemText(key.first, key.second);
        for (const KernelBenchFile& f : files)
          inv.unused.push_back({{"file", f.path.string()}, {"reason", why}});
        continue;
      }
      levels.insert(key.first);
      ++mapped_problems;
      for (const KernelBenchFile& f : files) judged += sample_ == "best" || f.sample == sample_;
    }
    inv.levels.assign(levels.begin(), levels.end());
    inv.summary = {{"layout", layout_.layout},    {"dir", dir_.string()},
                   {"sample", sample_},           {"files", layout_.files.size()},
                   {"problems", mapped_problems}, {"samples", SortedSamples()},
                   {"judged_files", judged},      {"companions", layout_.companions},
                   {"unused", inv.unused.size()}};
    return inv;
  }

 private:
  // Replaced: why the files of a problem were written for another program than today's task
  // (the leaderboard ships the problem it saw), or "".
  static std::string Replaced(const std::vector<KernelBenchFile>& files,
                              const std::string& task_code) {
    if (files.empty() || files[0].problem_source.empty()) return "";
    std::ifstream in(files[0].problem_source);
    std::stringstream then;
    then << in.rdbuf();
    const std::string model = ModelClassText(then.str());
    if (model.empty() || model == ModelClassText(task_code)) return "";
    return "written for another version of " + ProblemText(files[0].level, files[0].problem) +
           ": " + files[0].problem_source.filename().string() +
           " defines another Model than the suite's task (KernelBench replaced the problem)";
  }
  static bool IsSampleId(const std::string& s) {
    return !s.empty() && s.size() < 10 && s.find_first_not_of("0123456789") == std::string::npos;
  }
  std::vector<std::string> SortedSamples() const {
    std::vector<std::string> v(samples_.begin(), samples_.end());
    std::sort(v.begin(), v.end(), SampleLess);
    return v;
  }

  fs::path dir_;
  std::string sample_;
  Status scan_;
  KernelBenchLayout layout_;
  std::map<std::pair<int, int>, std::vector<KernelBenchFile>> by_problem_;
  std::set<std::string> samples_;
};

}  // namespace

std::unique_ptr<Solver> MakeKernelBenchSolver(const fs::path& dir, const std::string& sample) {
  return std::make_unique<KernelBenchSolver>(fs::weakly_canonical(fs::absolute(dir)), sample);
}

}  // namespace cuda_agent
