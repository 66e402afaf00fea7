// kernelbench_layout.cc — KernelBench's run folders and the leaderboard's assets, by name
// (kernelbench_layout.h).
#include "eval/kernelbench_layout.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include "common/json.h"

namespace cuda_agent {
namespace {

bool IsNumber(const std::string& s) {
  return !s.empty() && s.size() < 10 && s.find_first_not_of("0123456789") == std::string::npos;
}

// KernelBench's own files beside the solutions: prompts, the run's config and its eval results.
bool IsCompanion(const std::string& name) {
  static const std::regex companion(
      R"((level_\d+_problem_\d+_sample_\d+_prompt\.txt|prompt_level_\d+_problem_\d+\.txt|)"
      R"(generation_config\.yaml|eval_config\.yaml|eval_results\.json|pass_at_k_results\.json))");
  return std::regex_match(name, companion);
}

// LeaderboardAssets: the folder holding raw_data.json and solutions/ when `dir` is the
// leaderboard's repository, its docs/assets or its solutions/; empty otherwise.
fs::path LeaderboardAssets(const fs::path& dir) {
  std::error_code ec;
  for (const fs::path& candidate : {dir, dir / "docs" / "assets", dir.parent_path()}) {
    if (candidate == dir.parent_path() && dir.filename() != "solutions") continue;
    if (fs::is_regular_file(candidate / "raw_data.json", ec) &&
        fs::is_directory(candidate / "solutions", ec))
      return candidate;
  }
  return {};
}

Status ScanLeaderboard(const fs::path& assets, KernelBenchLayout* out) {
  out->layout = "leaderboard";
  std::ifstream in(assets / "raw_data.json");
  std::stringstream text;
  text << in.rdbuf();
  Json raw = Json::parse(text.str(), nullptr, false);
  if (raw.is_discarded() || !raw.is_array())
    return InvalidArgument((assets / "raw_data.json").string() +
                           ": not the leaderboard's raw_data.json (a JSON array of solutions)");
  const fs::path solutions = assets / "solutions";
  std::map<std::string, bool> named;  // solution file stem -> used
  std::map<std::tuple<int, int, std::string>, fs::path> seen;
  for (const Json& r : raw) {
    const Json file = r.is_object() ? r.value("file", Json()) : Json();
    const Json level = r.is_object() ? r.value("level", Json()) : Json();
    const Json problem = r.is_object() ? r.value("problem_id", Json()) : Json();
    const Json model = r.is_object() ? r.value("display_name", Json()) : Json();
    if (!file.is_string() || !level.is_number_integer() || !problem.is_number_integer() ||
        !model.is_string()) {
      out->unused.push_back(
          {assets / "raw_data.json", "an entry without file, level, problem_id and display_name: " +
                                         r.dump().substr(0, 120)});
      continue;
    }
    const std::string stem = file.get<std::string>();
    const fs::path path = solutions / (stem + ".py");
    named[stem] = true;
    // raw_data.json numbers problems from 0 (its problem 18 of level 1 is 19_ReLU).
    const int lv = level.get<int>(), pid = problem.get<int>() + 1;
    std::error_code ec;
    if (stem.find('/') != std::string::npos || !fs::is_regular_file(path, ec)) {
      out->unused.push_back({path, "raw_data.json names it (level " + std::to_string(lv) +
                                       " problem " + std::to_string(pid) + ", " +
                                       model.get<std::string>() + ") but the file is missing"});
      continue;
    }
    auto key = std::make_tuple(lv, pid, model.get<std::string>());
    if (auto it = seen.find(key); it != seen.end()) {
      out->unused.push_back({path, "a second solution of " + model.get<std::string>() +
                                       " for level " + std::to_string(lv) + " problem " +
                                       std::to_string(pid) + " (the first is " +
                                       it->second.filename().string() + ")"});
      continue;
    }
    seen[key] = path;
    const fs::path problem_file =
        assets / "problems" / ("l" + std::to_string(lv) + "_p" + std::to_string(pid) + ".py");
    out->files.push_back({path, lv, pid, model.get<std::string>(),
                          fs::is_regular_file(problem_file, ec) ? problem_file : fs::path()});
  }
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(solutions, ec)) {
    if (named.count(e.path().stem().string()) && e.path().extension() == ".py") continue;
    out->unused.push_back(
        {e.path(), "not named by raw_data.json: its level and problem are unknown"});
  }
  return OkStatus();
}

void ScanRunFolder(const fs::path& dir, KernelBenchLayout* out) {
  static const std::regex run(R"(level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py)");
  static const std::regex single(R"(generated_kernel_level_(\d+)_problem_(\d+)\.py)");
  bool has_run = false, has_single = false;
  std::map<std::tuple<int, int, std::string>, fs::path> seen;
  std::vector<fs::path> entries;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& path : entries) {
    const std::string name = path.filename().string();
    if (fs::is_directory(path, ec)) {
      out->unused.push_back({path,
                             "a folder: kernelbench:DIR reads the files of one run folder "
                             "(pass kernelbench:" +
                                 path.string() + " for this one)"});
      continue;
    }
    std::smatch m;
    KernelBenchFile f{path, 0, 0, "0", {}};
    if (std::regex_match(name, m, run)) {
      has_run = true;
      f.sample = std::to_string(std::stoi(m[3].str().substr(0, 9)));
    } else if (std::regex_match(name, m, single)) {
      has_single = true;
    } else if (IsCompanion(name)) {
      ++out->companions;
      continue;
    } else {
      out->unused.push_back(
          {path, path.extension() == ".py"
                     ? "not a KernelBench solution name (level_L_problem_P_sample_S_kernel.py or "
                       "generated_kernel_level_L_problem_P.py): its level and problem are unknown"
                     : "not a solution file (.py)"});
      continue;
    }
    f.level = std::stoi(m[1].str().substr(0, 6));
    f.problem = std::stoi(m[2].str().substr(0, 9));
    auto key = std::make_tuple(f.level, f.problem, f.sample);
    if (auto it = seen.find(key); it != seen.end()) {
      out->unused.push_back({path, "the same level, problem and sample as " +
                                       it->second.filename().string() + " (that one is used)"});
      continue;
    }
    seen[key] = path;
    out->files.push_back(f);
  }
  out->layout = has_run && has_single ? "run+single" : has_single ? "single" : "run";
}

}  // namespace

std::string ModelClassText(const std::string& source) {
  // Docstrings (and any triple-quoted string) out first, then line by line.
  std::string text;
  for (size_t i = 0; i < source.size();) {
    if (source.compare(i, 3, R"(""")") == 0 || source.compare(i, 3, "'''") == 0) {
      const size_t end = source.find(source.substr(i, 3), i + 3);
      i = end == std::string::npos ? source.size() : end + 3;
      continue;
    }
    text += source[i++];
  }
  std::string out;
  bool inside = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (!inside) {
      inside = line.rfind("class Model(", 0) == 0 || line.rfind("class Model:", 0) == 0;
      if (!inside) continue;
    } else if (line[0] != ' ' && line[0] != '\t') {
      break;
    }
    for (char c : line)
      if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  }
  return out;
}

bool SampleLess(const std::string& a, const std::string& b) {
  const bool na = IsNumber(a), nb = IsNumber(b);
  if (na != nb) return na;
  if (na) return std::stol(a) < std::stol(b);
  return a < b;
}

std::pair<int, int> KernelBenchProblemOf(int level, const std::string& task_name) {
  const std::string stem = fs::path(task_name).filename().string();
  size_t digits = 0;
  while (digits < stem.size() && digits < 9 &&
         std::isdigit(static_cast<unsigned char>(stem[digits])))
    ++digits;
  if (level <= 0 || digits == 0 || digits >= stem.size() || stem[digits] != '_') return {0, 0};
  return {level, std::stoi(stem.substr(0, digits))};
}

Result<KernelBenchLayout> ScanKernelBenchDir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound("kernelbench folder not found: " + dir.string());
  KernelBenchLayout out;
  if (fs::path assets = LeaderboardAssets(dir); !assets.empty()) {
    if (Status s = ScanLeaderboard(assets, &out); !s.ok()) return s;
  } else {
    ScanRunFolder(dir, &out);
  }
  std::sort(out.files.begin(), out.files.end(),
            [](const KernelBenchFile& a, const KernelBenchFile& b) {
              if (a.level != b.level) return a.level < b.level;
              if (a.problem != b.problem) return a.problem < b.problem;
              return SampleLess(a.sample, b.sample);
            });
  std::sort(out.unused.begin(), out.unused.end(),
            [](const UnusedFile& a, const UnusedFile& b) { return a.path < b.path; });
  return out;
}

}  // namespace cuda_agent
