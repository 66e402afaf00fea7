// task.cc — task ids, shape check, selection and the three task sources.
#include "task/task.h"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "common/hash.h"
#include "common/json.h"

namespace cuda_agent {
namespace {

bool DefinesName(const std::string& code, const std::string& name, bool is_class) {
  // A top-level `def name(`, `class name(`/`class name:` or `name =` assignment.
  std::string keyword = is_class ? "class" : "def";
  std::regex definition("(^|\\n)(" + keyword + "\\s+" + name + "\\b|" + name + "\\s*=)");
  return std::regex_search(code, definition);
}

int LevelFromName(const std::string& name) {
  std::smatch m;
  static const std::regex level_re("level(\\d+)");
  if (std::regex_search(name, m, level_re)) return std::stoi(m[1]);
  return 0;
}

Result<Task> TaskFromFile(const fs::path& file, const std::string& name) {
  Result<std::string> code = ReadFile(file);
  if (!code.ok()) return code.status();
  Task task;
  task.code = std::move(code).value();
  task.id = TaskIdForCode(task.code);
  task.name = name;
  task.source_path = file;
  task.level = LevelFromName(name);
  return task;
}

// A single .py file.
class SingleFileSource : public TaskSource {
 public:
  const char* Kind() const override { return "file"; }
  bool Recognises(const fs::path& path) const override {
    return path.extension() == ".py" && fs::is_regular_file(path);
  }
  Result<std::vector<Task>> LoadAll(const fs::path& path) const override {
    Result<Task> task = TaskFromFile(path, path.stem().string());
    if (!task.ok()) return task.status();
    return std::vector<Task>{std::move(task).value()};
  }
};

// A KernelBench directory: level*/ folders of .py files, or a flat folder of .py files.
class KernelBenchDirSource : public TaskSource {
 public:
  const char* Kind() const override { return "kernelbench-dir"; }
  bool Recognises(const fs::path& path) const override { return fs::is_directory(path); }
  Result<std::vector<Task>> LoadAll(const fs::path& root) const override {
    std::vector<Task> tasks;
    for (const fs::path& rel : ListFilesRecursive(root)) {
      if (rel.extension() != ".py" || rel.filename().string().rfind("__", 0) == 0) continue;
      std::string name = (rel.parent_path() / rel.stem()).generic_string();
      Result<Task> task = TaskFromFile(root / rel, name);
      if (!task.ok()) return task.status();
      tasks.push_back(std::move(task).value());
    }
    if (tasks.empty()) return NotFound("no task files (*.py) under " + root.string());
    // Natural order inside a level: 2_x before 10_x.
    std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) {
      if (a.level != b.level) return a.level < b.level;
      auto number = [](const Task& t) {
        std::string stem = fs::path(t.name).filename().string();
        return std::atoi(stem.c_str());
      };
      if (number(a) != number(b)) return number(a) < number(b);
      return a.name < b.name;
    });
    return tasks;
  }
};

// A JSONL dataset with the published columns.
class JsonlSource : public TaskSource {
 public:
  const char* Kind() const override { return "jsonl"; }
  bool Recognises(const fs::path& path) const override {
    return path.extension() == ".jsonl" && fs::is_regular_file(path);
  }
  Result<std::vector<Task>> LoadAll(const fs::path& path) const override {
    Result<std::string> text = ReadFile(path);
    if (!text.ok()) return text.status();
    std::vector<Task> tasks;
    std::istringstream lines(text.value());
    std::string line;
    int line_number = 0;
    while (std::getline(lines, line)) {
      ++line_number;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      std::string where = path.string() + ":" + std::to_string(line_number);
      Result<Json> row = ParseJson(line, where);
      if (!row.ok()) return row.status();
      Result<Task> task = TaskFromRow(row.value(), where);
      if (!task.ok()) return task.status();
      task->source_path = path;
      tasks.push_back(std::move(task).value());
    }
    if (tasks.empty()) return NotFound("no rows in " + path.string());
    return tasks;
  }

 private:
  static Result<Task> TaskFromRow(const Json& row, const std::string& where) {
    if (!row.is_object()) return InvalidArgument(where + ": a row must be a JSON object");
    auto code = row.find("code");
    if (code == row.end() || !code->is_string()) {
      return InvalidArgument(where + ": row has no string column \"code\"");
    }
    Task task;
    task.code = code->get<std::string>();
    task.id = TaskIdForCode(task.code);
    for (const char* key : {"task_id", "id", "name"}) {
      auto it = row.find(key);
      if (it == row.end()) continue;
      task.name = it->is_string() ? it->get<std::string>() : it->dump();
      if (std::string(key) != "name") task.id = task.name;
      break;
    }
    if (task.name.empty()) task.name = task.id;
    if (auto it = row.find("data_source"); it != row.end() && it->is_string()) {
      task.data_source = it->get<std::string>();
    }
    if (auto it = row.find("ops"); it != row.end()) {
      // Published rows store ops as a list, or as the text of a Python/JSON list.
      if (it->is_array()) {
        for (const auto& op : *it)
          task.ops.push_back(op.is_string() ? op.get<std::string>() : op.dump());
      } else if (it->is_string()) {
        static const std::regex quoted("['\"]([^'\"]+)['\"]");
        std::string s = it->get<std::string>();
        for (std::sregex_iterator m(s.begin(), s.end(), quoted), end; m != end; ++m) {
          task.ops.push_back((*m)[1]);
        }
      }
    }
    return task;
  }
};

}  // namespace

std::string TaskIdForCode(const std::string& code) { return Sha256Hex(code).substr(0, 16); }

Status CheckTaskShape(const Task& task) {
  const char* what = task.name.empty() ? "task" : task.name.c_str();
  if (!DefinesName(task.code, "Model", /*is_class=*/true)) {
    return InvalidArgument(std::string(what) + ": task defines no class Model");
  }
  for (const char* fn : {"get_inputs", "get_init_inputs"}) {
    if (!DefinesName(task.code, fn, /*is_class=*/false)) {
      return InvalidArgument(std::string(what) + ": task defines no " + fn + "()");
    }
  }
  return OkStatus();
}

Result<Task> TaskSource::LoadOne(const fs::path& path, const std::string& selector) const {
  Result<std::vector<Task>> all = LoadAll(path);
  if (!all.ok()) return all.status();
  if (selector.empty()) {
    if (all->size() == 1) return all->front();
    return InvalidArgument(path.string() + " holds " + std::to_string(all->size()) +
                           " tasks: choose one with PATH#NAME (e.g. " + all->front().name + ")");
  }
  for (const Task& t : all.value()) {
    if (t.name == selector || t.id == selector || fs::path(t.name).filename() == selector) return t;
  }
  bool numeric = !selector.empty() && std::all_of(selector.begin(), selector.end(), ::isdigit);
  if (numeric && std::string(Kind()) == "jsonl") {
    size_t index = std::stoul(selector);
    if (index < all->size()) return all->at(index);
  }
  return NotFound("no task '" + selector + "' in " + path.string());
}

const std::vector<std::unique_ptr<TaskSource>>& TaskSources() {
  static const auto* sources = [] {
    auto* v = new std::vector<std::unique_ptr<TaskSource>>();
    v->push_back(std::make_unique<SingleFileSource>());
    v->push_back(std::make_unique<JsonlSource>());
    v->push_back(std::make_unique<KernelBenchDirSource>());
    return v;
  }();
  return *sources;
}

namespace {
Result<const TaskSource*> SourceFor(const fs::path& path) {
  if (!fs::exists(path)) return NotFound("task path does not exist: " + path.string());
  for (const auto& source : TaskSources()) {
    if (source->Recognises(path)) return source.get();
  }
  return InvalidArgument("not a task file (.py), dataset (.jsonl) or directory: " + path.string());
}
}  // namespace

Result<std::vector<Task>> LoadSuite(const fs::path& path) {
  Result<const TaskSource*> source = SourceFor(path);
  if (!source.ok()) return source.status();
  return source.value()->LoadAll(path);
}

Result<Task> LoadTask(const std::string& reference) {
  std::string path = reference;
  std::string selector;
  size_t hash = reference.rfind('#');
  if (hash != std::string::npos && !fs::exists(reference)) {
    path = reference.substr(0, hash);
    selector = reference.substr(hash + 1);
  }
  Result<const TaskSource*> source = SourceFor(path);
  if (!source.ok()) return source.status();
  return source.value()->LoadOne(path, selector);
}

std::vector<Task> SelectTasks(const std::vector<Task>& suite, const std::string& select,
                              int limit) {
  std::set<std::string> wanted;
  std::stringstream ss(select);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) wanted.insert(item);
  }
  std::vector<Task> chosen;
  for (const Task& t : suite) {
    if (!wanted.empty() && !wanted.count(t.name) && !wanted.count(t.id) &&
        !wanted.count(fs::path(t.name).filename().string())) {
      continue;
    }
    chosen.push_back(t);
    if (limit > 0 && static_cast<int>(chosen.size()) >= limit) break;
  }
  return chosen;
}

}  // namespace cuda_agent
