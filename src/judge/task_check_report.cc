// task_check_report.cc — `tasks check`'s report: the records of a run summed up per answer and
// policy, and its markdown form.
#include <algorithm>
#include <set>
#include <sstream>

#include "judge/task_check.h"

namespace cuda_agent {
namespace {

// PassingPolicies lists the policies under which one answer passes, in the report's policy order.
std::vector<std::string> PassingPolicies(const Json& answer, const Json& policies) {
  std::vector<std::string> out;
  if (!answer.is_object() || !answer.contains("pass") || !answer["pass"].is_object()) return out;
  for (const auto& p : policies) {
    const std::string name = p.get<std::string>();
    if (answer["pass"].value(name, false)) out.push_back(name);
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// Cell escapes text for a markdown table cell.
std::string Cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

const char* AnswerTitle(const std::string& answer) {
  if (answer == "zeros") return "zeros";
  if (answer == "constant") return "a constant (the mean)";
  if (answer == "noise") return "mean/std noise";
  if (answer == "input") return "the input";
  return "output independent of the input";
}

}  // namespace

bool IsFlagged(const Json& record) {
  if (!record.is_object() || !record.value("ok", false) || !record.contains("answers"))
    return false;
  for (const auto& [name, answer] : record["answers"].items()) {
    if (!answer.is_object() || !answer.contains("pass")) continue;
    for (const auto& [policy, passes] : answer["pass"].items()) {
      if (passes.is_boolean() && passes.get<bool>()) return true;
    }
  }
  return false;
}

Json MakeTaskCheckReport(const std::string& suite, const std::vector<Task>& tasks,
                         const std::map<std::string, Json>& records,
                         const TaskCheckOptions& options, const Json& env) {
  Json summary = Json::object();
  for (const auto& p : options.policies) {
    summary[p] = Json::object();
    for (const auto& a : TrivialAnswers()) summary[p][a] = 0;
    summary[p]["any"] = 0;
  }
  Json rows = Json::array();
  int checked = 0, failed = 0, malformed = 0, flagged = 0, pending = 0;
  for (const Task& t : tasks) {
    auto it = records.find(t.name);
    if (it == records.end()) {
      ++pending;
      continue;
    }
    Json r = it->second;
    if (!r.contains("status")) r["status"] = r.value("ok", false) ? "checked" : "failed";
    const std::string status = r["status"];
    if (status == "malformed") {
      ++malformed;
    } else if (status == "failed") {
      ++failed;
    } else {
      ++checked;
      r["flagged"] = IsFlagged(r);
      if (r["flagged"].get<bool>()) ++flagged;
      for (const auto& p : options.policies) {
        bool any = false;
        for (const auto& a : TrivialAnswers()) {
          const Json answer = r.contains("answers") ? r["answers"].value(a, Json()) : Json();
          if (answer.is_object() && answer.contains("pass") && answer["pass"].value(p, false)) {
            summary[p][a] = summary[p][a].get<int>() + 1;
            any = true;
          }
        }
        if (any) summary[p]["any"] = summary[p]["any"].get<int>() + 1;
      }
    }
    rows.push_back(r);
  }
  return {{"suite", suite},
          {"device", DeviceName(options.device)},
          {"policies", options.policies},
          {"seed", options.seed},
          {"env", env},
          {"complete", pending == 0},
          {"counts",
           {{"tasks", tasks.size()},
            {"checked", checked},
            {"failed", failed},
            {"malformed", malformed},
            {"flagged", flagged},
            {"pending", pending}}},
          {"summary", summary},
          {"tasks", rows}};
}

std::string DescribeRecord(const Json& record) {
  const std::string status =
      record.value("status", record.value("ok", false) ? "checked" : "failed");
  if (status != "checked") return status + ": " + record.value("reason", "");
  if (!IsFlagged(record)) return "ok";
  std::vector<std::string> parts;
  for (const auto& a : TrivialAnswers()) {
    Json answer = record["answers"].value(a, Json());
    std::vector<std::string> passing;
    if (answer.is_object() && answer.contains("pass")) {
      for (const auto& [policy, passes] : answer["pass"].items()) {
        if (passes.is_boolean() && passes.get<bool>()) passing.push_back(policy);
      }
    }
    if (!passing.empty()) parts.push_back(a + " (" + Join(passing, ", ") + ")");
  }
  return "flagged: " + Join(parts, ", ");
}

std::string FormatTaskCheckMarkdown(const Json& report) {
  std::ostringstream md;
  const Json& counts = report["counts"];
  const Json& policies = report["policies"];
  const Json env = report.value("env", Json::object());
  md << "# Task check: " << report.value("suite", "") << "\n\n";
  if (!report.value("complete", true)) {
    md << "**Partial report**: " << counts.value("pending", 0) << " of " << counts.value("tasks", 0)
       << " tasks not done yet.\n\n";
  }
  md << "- device: " << report.value("device", "");
  if (env.value("gpu", Json()).is_string()) md << " (" << env["gpu"].get<std::string>() << ")";
  if (env.value("torch_version", Json()).is_string())
    md << ", torch " << env["torch_version"].get<std::string>();
  md << ", seed " << report.value("seed", 0);
  if (env.value("sandbox", Json()).is_string())
    md << ", sandbox " << env["sandbox"].get<std::string>();
  md << "\n- tasks: " << counts.value("tasks", 0) << " selected; " << counts.value("checked", 0)
     << " checked, " << counts.value("failed", 0) << " failed to run, "
     << counts.value("malformed", 0) << " malformed (not run)\n";
  md << "- flagged: " << counts.value("flagged", 0)
     << " checked tasks that a trivial answer passes under at least one policy\n\n";
  md << "A trivial answer passes a task when the policy's comparison (docs/precision.md) "
        "accepts it as the output for input set A: zeros, a constant (the mean of the expected "
        "output), noise with the expected output's mean and standard deviation, or an input "
        "tensor of the output's shape and dtype. \"Output independent of the input\": the output "
        "for another input set B passes for A.\n\n";

  md << "## Tasks a trivial answer passes, per policy\n\n| trivial answer |";
  for (const auto& p : policies) md << " " << p.get<std::string>() << " |";
  md << "\n|---|";
  for (size_t i = 0; i < policies.size(); ++i) md << "---:|";
  md << "\n";
  std::vector<std::string> rows = TrivialAnswers();
  rows.push_back("any");
  for (const auto& a : rows) {
    md << "| " << (a == "any" ? "any of these (flagged)" : AnswerTitle(a)) << " |";
    for (const auto& p : policies) {
      md << " " << report["summary"][p.get<std::string>()].value(a, 0) << " |";
    }
    md << "\n";
  }

  md << "\n## Flagged tasks\n\n";
  std::ostringstream flagged;
  for (const auto& r : report["tasks"]) {
    if (!r.value("flagged", false)) continue;
    flagged << "| " << Cell(r.value("name", "")) << " | " << Cell(r.value("output_signature", ""))
            << " |";
    for (const auto& a : TrivialAnswers()) {
      Json answer = r["answers"].value(a, Json());
      std::vector<std::string> passing = PassingPolicies(answer, policies);
      std::string cell = passing.empty() ? "—" : Join(passing, ", ");
      if (a == "input" && !passing.empty()) cell += " (" + answer.value("input", "") + ")";
      if (a == "independent" && !passing.empty() && r.contains("inputs_vary") &&
          !r.value("inputs_vary", true)) {
        cell += " (the inputs do not change with the seed)";
      }
      flagged << " " << Cell(cell) << " |";
    }
    flagged << "\n";
  }
  if (flagged.str().empty()) {
    md << "None.\n";
  } else {
    md << "| task | output | zeros | constant | noise | the input "
          "| output independent of the input |\n"
       << "|---|---|---|---|---|---|---|\n"
       << flagged.str();
  }

  std::ostringstream failed, malformed;
  for (const auto& r : report["tasks"]) {
    const std::string status = r.value("status", "");
    if (status == "failed") {
      failed << "| " << Cell(r.value("name", "")) << " | "
             << Cell(r.value("error_kind", Json("")).is_string() ? r.value("error_kind", "") : "")
             << " | " << Cell(r.value("reason", "")) << " |\n";
    } else if (status == "malformed") {
      malformed << "- `" << r.value("name", "") << "`: " << r.value("reason", "") << "\n";
    }
  }
  if (!failed.str().empty()) {
    md << "\n## Failed to run\n\n| task | kind | reason |\n|---|---|---|\n" << failed.str();
  }
  if (!malformed.str().empty()) md << "\n## Not run (malformed)\n\n" << malformed.str();
  return md.str();
}

}  // namespace cuda_agent
