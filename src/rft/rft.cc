// rft.cc — rejection fine-tuning: filters over trajectories and the SFT rows of the kept ones.
#include "rft/rft.h"

#include <fstream>

namespace cuda_agent {

Json RftReport::ToJson() const {
  Json removal_list = Json::array();
  for (const RftRemoval& r : removals) {
    removal_list.push_back(
        {{"source", r.source}, {"task", r.task}, {"filter", r.filter}, {"reason", r.reason}});
  }
  return {{"version", kSftRowVersion}, {"trajectories", trajectories}, {"kept", kept},
          {"removed", removed},        {"removals", removal_list},     {"problems", problems}};
}

Json SftRow(const Trajectory& t) {
  Json messages = Json::array();
  messages.push_back({{"role", "system"}, {"content", t.system}});
  messages.push_back({{"role", "user"}, {"content", t.task_message}});
  for (const TrajectoryStep& step : t.steps) {
    if (step.role == "assistant") {
      Json message = {{"role", "assistant"}, {"content", step.content}};
      if (!step.tool_calls.empty()) {
        Json calls = Json::array();
        for (const TrajectoryToolCall& call : step.tool_calls) {
          calls.push_back({{"id", call.id},
                           {"type", "function"},
                           {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
        }
        message["tool_calls"] = calls;
      }
      messages.push_back(std::move(message));
    } else {
      messages.push_back({{"role", "tool"},
                          {"tool_call_id", step.tool_call_id},
                          {"name", step.tool},
                          {"content", step.content}});
    }
  }
  Json tools = Json::array();
  for (const Json& tool : t.tools) {
    tools.push_back({{"type", "function"},
                     {"function",
                      {{"name", tool.value("name", "")},
                       {"description", tool.value("description", "")},
                       {"parameters", tool.value("parameters", Json::object())}}}});
  }
  int turns = 0;
  for (const TrajectoryStep& step : t.steps) turns += step.role == "assistant" ? 1 : 0;
  return {{"messages", messages},
          {"tools", tools},
          {"meta",
           {{"version", kSftRowVersion},
            {"task", t.task},
            {"task_id", t.task_id},
            {"reward", t.reward ? Json(*t.reward) : Json(nullptr)},
            {"stop_reason", t.stop_reason},
            {"turns", turns},
            {"source", t.source}}}};
}

RftReport FilterTrajectories(const TrajectoryCorpus& corpus, const RftOptions& options,
                             std::vector<Json>* rows) {
  RftReport report;
  report.problems = corpus.problems;
  auto filters = DefaultFilters(options.filters);
  for (const auto& filter : filters) report.removed[filter->Name()] = 0;
  report.removed["bad_input"] = 0;
  for (const Trajectory& t : corpus.trajectories) {
    ++report.trajectories;
    if (!t.problems.empty()) {
      ++report.removed["bad_input"];
      report.removals.push_back({t.source, t.task, "bad_input", t.problems.front()});
      report.problems.insert(report.problems.end(), t.problems.begin(), t.problems.end());
      continue;
    }
    bool removed = false;
    for (const auto& filter : filters) {
      if (std::optional<std::string> why = filter->Reject(t)) {
        ++report.removed[filter->Name()];
        report.removals.push_back({t.source, t.task, filter->Name(), *why});
        removed = true;
        break;
      }
    }
    if (removed) continue;
    ++report.kept;
    if (rows != nullptr) rows->push_back(SftRow(t));
  }
  return report;
}

Result<RftReport> RunRft(const RftOptions& options, const fs::path& out_dir) {
  Result<TrajectoryCorpus> corpus = ReadTrajectories(options.inputs);
  if (!corpus.ok()) return corpus.status();
  std::vector<Json> rows;
  RftReport report = FilterTrajectories(corpus.value(), options, &rows);
  if (options.strict && !report.problems.empty()) {
    return InvalidArgument("bad input (--strict): " + report.problems.front() +
                           (report.problems.size() > 1
                                ? " (and " + std::to_string(report.problems.size() - 1) + " more)"
                                : ""));
  }
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return Internal("cannot create " + out_dir.string() + ": " + ec.message());
  std::string jsonl;
  for (const Json& row : rows) jsonl += row.dump() + "\n";
  Status written = WriteFileAtomic(out_dir / "sft.jsonl", jsonl);
  if (!written.ok()) return written;
  written = WriteJsonFile(out_dir / "report.json", report.ToJson());
  if (!written.ok()) return written;
  return report;
}

}  // namespace cuda_agent
