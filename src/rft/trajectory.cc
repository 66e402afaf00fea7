// trajectory.cc — reads the JSONL records of agent episodes into Trajectory values, reporting bad
// input by file and line (trajectory.h).
#include "rft/trajectory.h"

#include <algorithm>
#include <sstream>

namespace cuda_agent {
namespace {

std::string Where(const std::string& file, int line) { return file + ":" + std::to_string(line); }

std::string StringField(const Json& record, const char* key) {
  auto it = record.find(key);
  return it != record.end() && it->is_string() ? it->get<std::string>() : std::string();
}

long LongField(const Json& record, const char* key) {
  auto it = record.find(key);
  return it != record.end() && it->is_number() ? it->get<long>() : 0;
}

// RewardOf reads a reward value: a number, or nullopt for null or a missing field.
std::optional<double> RewardOf(const Json& holder) {
  if (!holder.is_object()) return std::nullopt;
  auto it = holder.find("reward");
  if (it == holder.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// ArgumentsText keeps a call's arguments as the model sent them: a string as is, anything else
// (an object written by an older writer) as its JSON text.
std::string ArgumentsText(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  return value.dump();
}

// Reader applies the records of one file to the trajectories it starts.
class Reader {
 public:
  Reader(std::string file, fs::path dir) : file_(std::move(file)), dir_(std::move(dir)) {}

  // Line reads one record; a field of the wrong type ends as a problem of that line.
  void Line(const std::string& text, int line) {
    try {
      Record(text, line);
    } catch (const Json::exception& e) {
      Problem(line, std::string("malformed record: ") + e.what());
    }
  }

  void Record(const std::string& text, int line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) return;
    Json record = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (record.is_discarded() || !record.is_object()) {
      Problem(line, record.is_discarded() ? "not a JSON object (a truncated or corrupt line)"
                                          : "a record must be a JSON object");
      return;
    }
    auto version = record.find("version");
    if (version == record.end() || !version->is_number_integer() ||
        version->get<int>() != kTrajectoryVersion) {
      Problem(line, "unknown schema version " +
                        (version == record.end() ? std::string("(missing)") : version->dump()) +
                        " (this rft reads version " + std::to_string(kTrajectoryVersion) + ")");
      return;
    }
    const std::string type = StringField(record, "type");
    if (type == "episode") {
      StartEpisode(record, line);
      return;
    }
    if (current_ == nullptr) {
      corpus_.problems.push_back(Where(file_, line) + ": a '" + type +
                                 "' record before any 'episode' record");
      return;
    }
    if (type == "assistant") {
      TrajectoryStep step;
      step.role = "assistant";
      step.turn = static_cast<int>(LongField(record, "turn"));
      step.content = StringField(record, "content");
      auto calls = record.find("tool_calls");
      if (calls != record.end() && !calls->is_array() && !calls->is_null()) {
        Problem(line, "'tool_calls' must be an array");
        return;
      }
      if (calls != record.end() && calls->is_array()) {
        for (const Json& call : *calls) {
          if (!call.is_object()) {
            Problem(line, "a tool call must be an object");
            return;
          }
          step.tool_calls.push_back({StringField(call, "id"), StringField(call, "name"),
                                     ArgumentsText(call.value("arguments", Json()))});
        }
      }
      auto usage = record.find("usage");
      if (usage != record.end() && usage->is_object()) {
        step.prompt_tokens = LongField(*usage, "prompt_tokens");
        step.completion_tokens = LongField(*usage, "completion_tokens");
      }
      current_->steps.push_back(std::move(step));
    } else if (type == "observation") {
      TrajectoryStep step;
      step.role = "tool";
      step.turn = static_cast<int>(LongField(record, "turn"));
      step.content = StringField(record, "text");
      step.tool_call_id = StringField(record, "tool_call_id");
      step.tool = StringField(record, "tool");
      auto is_error = record.find("is_error");
      step.is_error = is_error != record.end() && is_error->is_boolean() && is_error->get<bool>();
      current_->steps.push_back(std::move(step));
    } else if (type == "stop") {
      current_->stop_reason = StringField(record, "reason");
      current_->turns = static_cast<int>(LongField(record, "turns"));
    } else if (type == "final_judgement") {
      current_->reward = RewardOf(record.value("result", Json()));
      current_->reward_source = "final_judgement";
    } else if (type != "turn" && type != "context_elided" && type != "context_exhausted" &&
               type != "llm_error") {
      Problem(line, "unknown record type '" + type + "'");
    }
  }

  TrajectoryCorpus Finish() {
    // result.json is the episode's summary: its reward wins over the trajectory's record (it is
    // written after the final judgement, also when the judgement gave no result).
    if (!dir_.empty() && corpus_.trajectories.size() == 1) {
      Trajectory& t = corpus_.trajectories.front();
      fs::path result_path = dir_ / "result.json";
      std::error_code ec;
      if (fs::exists(result_path, ec)) {
        Result<Json> result = ReadJsonFile(result_path);
        if (result.ok() && !result->is_object()) result = InvalidArgument("not a JSON object");
        if (!result.ok()) {
          t.problems.push_back(result_path.string() + ":1: " + result.status().message());
        } else if (Json version = result->value("version", Json());
                   !version.is_number_integer() || version.get<int>() != kTrajectoryVersion) {
          t.problems.push_back(result_path.string() + ":1: unknown schema version " +
                               version.dump());
        } else {
          t.reward = RewardOf(result.value());
          t.reward_source = "result.json";
          if (t.stop_reason.empty()) t.stop_reason = StringField(result.value(), "stop_reason");
        }
      }
    }
    return std::move(corpus_);
  }

 private:
  void StartEpisode(const Json& record, int line) {
    Trajectory t;
    t.source = Where(file_, line);
    t.episode_dir = dir_;
    t.task = StringField(record, "task");
    t.task_id = StringField(record, "task_id");
    t.system = StringField(record, "system");
    t.task_message = StringField(record, "task_message");
    if (auto tools = record.find("tools"); tools != record.end() && tools->is_array()) {
      t.tools = *tools;
    }
    corpus_.trajectories.push_back(std::move(t));
    current_ = &corpus_.trajectories.back();
    if (current_->task_message.empty()) Problem(line, "the 'episode' record has no task_message");
  }

  void Problem(int line, const std::string& what) {
    std::string text = Where(file_, line) + ": " + what;
    if (current_ == nullptr) {
      corpus_.problems.push_back(text);
    } else {
      current_->problems.push_back(text);
    }
  }

  std::string file_;
  fs::path dir_;
  TrajectoryCorpus corpus_;
  Trajectory* current_ = nullptr;
};

void Append(TrajectoryCorpus& into, TrajectoryCorpus&& from) {
  for (Trajectory& t : from.trajectories) into.trajectories.push_back(std::move(t));
  for (std::string& p : from.problems) into.problems.push_back(std::move(p));
}

}  // namespace

TrajectoryCorpus ParseTrajectoryRecords(const std::string& text, const std::string& file,
                                        const fs::path& dir) {
  Reader reader(file, dir);
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) reader.Line(line, number);
  return reader.Finish();
}

Result<TrajectoryCorpus> ReadTrajectories(const std::vector<fs::path>& inputs) {
  TrajectoryCorpus corpus;
  for (const fs::path& input : inputs) {
    std::error_code ec;
    std::vector<std::pair<fs::path, fs::path>> files;  // (file, episode folder)
    if (fs::is_directory(input, ec)) {
      for (const fs::path& relative : ListFilesRecursive(input)) {
        fs::path file = input / relative;
        if (file.filename() == "trajectory.jsonl") files.push_back({file, file.parent_path()});
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) {
        corpus.problems.push_back(input.string() + ": no trajectory.jsonl under this folder");
      }
    } else if (fs::is_regular_file(input, ec)) {
      // A trajectory.jsonl named directly still has its result.json next to it.
      files.push_back(
          {input, input.filename() == "trajectory.jsonl" ? input.parent_path() : fs::path()});
    } else {
      return NotFound("rft input " + input.string() + " does not exist");
    }
    for (const auto& [file, dir] : files) {
      Result<std::string> text = ReadFile(file);
      if (!text.ok()) {
        corpus.problems.push_back(file.string() + ": " + text.status().message());
        continue;
      }
      Append(corpus, ParseTrajectoryRecords(text.value(), file.string(), dir));
    }
  }
  return corpus;
}

}  // namespace cuda_agent
