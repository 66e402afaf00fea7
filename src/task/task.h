// task.h — a task is a KernelBench-style PyTorch program: `class Model(nn.Module)`, `get_inputs()`,
// `get_init_inputs()`. Tasks come from a single file, a KernelBench directory (level1/19_ReLU.py …)
// or a JSONL dataset with the published Ops-6K columns (`code`, `ops`, `data_source`, an id).
//
//   Result<Task> t = LoadTask("../shared/kernelbench#level1/19_ReLU");
//   Result<std::vector<Task>> suite = LoadSuite("tasks.jsonl");
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/status.h"

namespace cuda_agent {

struct Task {
  std::string id;    // stable: the first 16 hex digits of SHA-256 of `code`, or the dataset's id
  std::string name;  // human name: "level1/19_ReLU", a file stem, or the dataset id
  std::string code;  // the whole program
  fs::path source_path;          // the file it came from (for a JSONL row: the dataset file)
  int level = 0;                 // KernelBench level, 0 when unknown
  std::vector<std::string> ops;  // JSONL `ops` column
  std::string data_source;       // JSONL `data_source` column, e.g. "torch#2"
};

// TaskIdForCode is the content hash id of a program.
std::string TaskIdForCode(const std::string& code);

// CheckTaskShape looks for the three required definitions in the source text and names the first
// one missing. The harness later proves that they also run.
Status CheckTaskShape(const Task& task);

// TaskSource is one way of storing tasks; each implementation recognises its own paths.
class TaskSource {
 public:
  virtual ~TaskSource() = default;
  virtual const char* Kind() const = 0;
  virtual bool Recognises(const fs::path& path) const = 0;
  virtual Result<std::vector<Task>> LoadAll(const fs::path& path) const = 0;
  // LoadOne selects by name or id (for a single file, `selector` must be empty or match).
  virtual Result<Task> LoadOne(const fs::path& path, const std::string& selector) const;
};

// TaskSources lists every known source, in the order they are tried.
const std::vector<std::unique_ptr<TaskSource>>& TaskSources();

// LoadSuite loads every task at `path` (a file, a KernelBench directory, a .jsonl dataset).
Result<std::vector<Task>> LoadSuite(const fs::path& path);

// SelectTasks keeps the tasks named in `select` (comma-separated names, ids or file stems; empty:
// all), in suite order, at most `limit` of them (0: no limit).
std::vector<Task> SelectTasks(const std::vector<Task>& suite, const std::string& select, int limit);

// LoadTask takes "PATH" or "PATH#SELECTOR" (selector: a task name like level1/19_ReLU, a file stem
// like 19_ReLU, an id, or a JSONL row index).
Result<Task> LoadTask(const std::string& reference);

}  // namespace cuda_agent
