// export_command.cc — `cuda-agent export verl SUITE --out FILE.parquet`: a suite as verl's RL
// dataset (docs/training.md): chat prompt, data_source, reward_model {style, ground_truth = the
// task reference}, extra_info. Rows are built here from the task loaders; the parquet file is
// written by a Python step (python/cuda_agent_verl/parquet.py) from the JSONL next to it.
#include <iostream>

#include "cli/commands.h"
#include "cli/exit_status.h"
#include "cli/options.h"
#include "cli/python_step.h"
#include "common/device.h"
#include "common/json.h"
#include "harness/client.h"
#include "task/task.h"

namespace cuda_agent {
namespace {

const std::vector<OptionSpec>& ExportSpecs() {
  static const std::vector<OptionSpec> specs = {
      {"out", true, "FILE.parquet (FILE.jsonl is written next to it) or FILE.jsonl only", ""},
      {"mode", true, "single (one answer holds every file: stage 1) or agent (the agent loop)",
       "single"},
      {"device", true, "cuda or cpu: the prompt's kernels and the judge's device", "cuda"},
      {"inline", false, "carry each task's program in extra_info.task_source", ""},
      {"select", true, "comma-separated task names or ids (default: all)", ""},
      {"limit", true, "at most this many tasks (0: all)", "0"},
      {"split", true, "extra_info.split", "train"},
  };
  return specs;
}

int ExportUsage(const std::string& message) {
  std::cerr << "cuda-agent export: " << message
            << "\n\nusage: cuda-agent export verl SUITE --out FILE.parquet [--mode single|agent]\n"
               "SUITE: a KernelBench folder, a task .py file or a synth/Ops-6K .jsonl\n\noptions:\n"
            << FormatHelp(ExportSpecs());
  return kExitUsage;
}

// The answer format of single-turn rollouts; python/cuda_agent_verl/answer.py parses it.
std::string SingleTurnMessage(const Task& task, Device device) {
  const bool cpu = device == Device::kCpu;
  return std::string("Make the PyTorch program below faster with your own ") +
         (cpu ? "C++ kernels (CPU mode)" : "CUDA kernels") +
         ", following the instructions of the system prompt. You cannot run anything: answer "
         "once with every file of your solution, each as a fenced code block whose opening fence "
         "names the file after the language, for example\n\n```" +
         (cpu ? "cpp kernels/my_op.cpp" : "cuda kernels/my_op.cu") +
         "\n...\n```\n\n```cpp kernels/my_op_binding.cpp\n...\n```\n\n```python model_new.py\n...\n"
         "```\n\nOnly kernels/ files and model_new.py are taken; the last block of a file wins.\n\n"
         "model.py:\n```python\n" +
         task.code + (task.code.empty() || task.code.back() == '\n' ? "" : "\n") + "```\n";
}

std::string TaskReference(const fs::path& suite, const Task& task) {
  std::error_code ec;
  fs::path absolute = fs::absolute(suite, ec);
  if (fs::is_directory(suite, ec)) return absolute.string() + "#" + task.name;
  if (suite.extension() == ".jsonl") return absolute.string() + "#" + task.id;
  return absolute.string();
}

std::string DataSource(const Task& task) {
  if (!task.data_source.empty()) return "cuda_agent/" + task.data_source;
  if (task.level > 0) return "cuda_agent/kernelbench/level" + std::to_string(task.level);
  return "cuda_agent/task";
}

}  // namespace

int ExportCommand(const Args& args) {
  if (args.empty() || args[0] != "verl") return ExportUsage("the only export is `export verl`");
  Result<ParsedArgs> parsed = ParseArgs(ExportSpecs(), Args(args.begin() + 1, args.end()));
  if (!parsed.ok()) return ExportUsage(parsed.status().message());
  const ParsedArgs& a = parsed.value();
  if (a.positional().size() != 1) return ExportUsage("give exactly one SUITE");
  fs::path out = a.Get("out");
  if (out.empty() || (out.extension() != ".parquet" && out.extension() != ".jsonl")) {
    return ExportUsage("--out must name a .parquet or .jsonl file");
  }
  const std::string mode = a.Get("mode");
  if (mode != "single" && mode != "agent") return ExportUsage("--mode expects single or agent");
  Result<Device> device = ParseDevice(a.Get("device"));
  if (!device.ok()) return ExportUsage(device.status().message());
  Result<int> limit = ParseIntFlag(a, "limit");
  if (!limit.ok()) return ExportUsage(limit.status().message());

  fs::path suite = a.positional()[0];
  Result<std::vector<Task>> loaded = LoadSuite(suite);
  if (!loaded.ok()) {
    std::cerr << "cuda-agent export: " << loaded.status().message() << "\n";
    return kExitTaskError;
  }
  // A malformed task (what `tasks list` flags) would be a training prompt no candidate can pass:
  // each is named on stderr and left out; a suite of nothing else is an error.
  std::vector<Task> tasks;
  size_t malformed = 0;
  for (Task& task : SelectTasks(loaded.value(), a.Get("select"), limit.value())) {
    if (Status shape = CheckTaskShape(task); !shape.ok()) {
      std::cerr << "cuda-agent export: skipped, malformed: " << shape.message() << "\n";
      ++malformed;
      continue;
    }
    tasks.push_back(std::move(task));
  }
  if (tasks.empty()) {
    std::cerr << "cuda-agent export: no well-formed task to export ("
              << (malformed > 0 ? std::to_string(malformed) + " malformed, named above; "
                                : std::string())
              << "`cuda-agent tasks list SUITE` lists the suite's tasks and their problems)\n";
    return kExitTaskError;
  }
  Result<HarnessEnv> env = HarnessEnv::Discover();
  if (!env.ok()) {
    std::cerr << "cuda-agent export: " << env.status().message() << "\n";
    return kExitInternal;
  }
  Result<std::string> skill = ReadFile(env->home / "templates" / "workspace" / "SKILL.md");
  if (!skill.ok()) {
    std::cerr << "cuda-agent export: " << skill.status().message() << "\n";
    return kExitInternal;
  }
  std::string system = skill.value();
  for (size_t at = system.find("{{DEVICE}}"); at != std::string::npos;
       at = system.find("{{DEVICE}}", at)) {
    system.replace(at, 10, DeviceName(device.value()));
  }

  std::string jsonl;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const Task& task = tasks[i];
    Json extra = {
        {"index", i},         {"split", a.Get("split")}, {"task", TaskReference(suite, task)},
        {"task_id", task.id}, {"task_name", task.name},  {"device", DeviceName(device.value())},
        {"mode", mode}};
    if (a.Has("inline")) extra["task_source"] = task.code;
    Json row = {{"data_source", DataSource(task)},
                {"prompt",
                 {{{"role", "system"}, {"content", system}},
                  {{"role", "user"}, {"content", SingleTurnMessage(task, device.value())}}}},
                {"ability", "kernel_optimization"},
                {"reward_model", {{"style", "rule"}, {"ground_truth", TaskReference(suite, task)}}},
                {"extra_info", extra}};
    if (mode == "agent") row["agent_name"] = "cuda_agent";
    jsonl += row.dump() + "\n";
  }
  fs::path jsonl_path =
      out.extension() == ".jsonl" ? out : fs::path(out).replace_extension(".jsonl");
  std::error_code ec;
  if (jsonl_path.has_parent_path()) fs::create_directories(jsonl_path.parent_path(), ec);
  Status written = WriteFileAtomic(jsonl_path, jsonl);
  if (!written.ok()) {
    std::cerr << "cuda-agent export: " << written.message() << "\n";
    return kExitInternal;
  }
  if (out.extension() == ".parquet") {
    Status converted =
        RunPythonStep({"cuda_agent_verl.parquet", "rl", jsonl_path.string(), out.string()});
    if (!converted.ok()) {
      std::cerr << "cuda-agent export: " << converted.message() << "\n";
      return kExitInternal;
    }
  }
  std::cout << "export verl: " << tasks.size() << " tasks (" << mode << ") -> " << out.string();
  if (malformed > 0) std::cout << "; " << malformed << " malformed skipped (named on stderr)";
  std::cout << "\n";
  return kExitVerdict;
}

}  // namespace cuda_agent
