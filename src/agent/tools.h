// tools.h — the agent's tools, as a library: each tool has a name, a JSON Schema for its arguments
// (a ToolSpec for the model) and Run(arguments, context) → Observation. Nothing here talks to a
// terminal or keeps globals: the workspace, the sandbox and the episode's background jobs come in a
// ToolContext, so the same registry serves `cuda-agent solve` and an environment server.
//
//   ToolRegistry tools = DefaultToolRegistry();
//   BackgroundJobs jobs(out_dir / "jobs");
//   ToolContext ctx{.workspace = ws, .sandbox = &Sandbox::Default(), .jobs = &jobs};
//   Observation o = tools.Call("Read", R"({"file_path": "model.py"})", ctx);
//
// Tools: Bash{command, timeout?, run_in_background?}, BashOutput{id}, KillBash{id},
// Read{file_path, offset?, limit?}, Write{file_path, content}, Edit{file_path, old_string,
// new_string, replace_all?}, MultiEdit{file_path, edits}, Glob{pattern, path?}, Grep{pattern,
// path?, glob?}, TodoWrite{todos} (docs/agent.md).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/json.h"
#include "llm/llm_client.h"
#include "sandbox/sandbox.h"

namespace cuda_agent {

// Observation is what the model sees of a tool call.
struct Observation {
  std::string text;
  bool is_error = false;
};

inline Observation ErrorObservation(std::string text) { return {std::move(text), true}; }

class BackgroundJobs;

// ToolContext is everything a tool may touch.
struct ToolContext {
  fs::path workspace;                // absolute; every path argument must resolve inside it
  const Sandbox* sandbox = nullptr;  // Bash runs its commands here (null: Sandbox::Default())
  SandboxPolicy sandbox_policy;      // base policy for Bash; the workspace is added writable
  std::vector<std::string> env_set;  // extra "KEY=VALUE" for Bash (the judge gateway)
  BackgroundJobs* jobs = nullptr;    // background Bash jobs of this episode (null: refused)
  Json todos = Json::array();        // TodoWrite's list
  size_t output_cap_chars = 30000;   // longer observations keep head and tail
  double default_timeout_s = 120;
  double max_timeout_s = 600;
};

// Tool is one tool the model can call.
class Tool {
 public:
  virtual ~Tool() = default;
  virtual ToolSpec Spec() const = 0;
  // Run gets arguments already checked against Spec().parameters (required keys, basic types).
  virtual Observation Run(const Json& arguments, ToolContext& context) = 0;
};

// ToolRegistry holds the tools by name and turns every malformed call into an error observation.
class ToolRegistry {
 public:
  void Add(std::unique_ptr<Tool> tool);
  std::vector<ToolSpec> Specs() const;
  // Call parses `arguments_text`, validates it against the tool's schema and runs the tool; an
  // unknown tool, invalid JSON or a schema violation is an error observation, never a crash.
  Observation Call(const std::string& name, const std::string& arguments_text,
                   ToolContext& context) const;

 private:
  std::vector<std::unique_ptr<Tool>> tools_;
};

// DefaultToolRegistry: the ten tools above.
ToolRegistry DefaultToolRegistry();

// The tools one by one (file_tools.cc, bash_tools.cc).
std::unique_ptr<Tool> MakeReadTool();
std::unique_ptr<Tool> MakeWriteTool();
std::unique_ptr<Tool> MakeEditTool();
std::unique_ptr<Tool> MakeMultiEditTool();
std::unique_ptr<Tool> MakeGlobTool();
std::unique_ptr<Tool> MakeGrepTool();
std::unique_ptr<Tool> MakeTodoWriteTool();
std::unique_ptr<Tool> MakeBashTool();
std::unique_ptr<Tool> MakeBashOutputTool();
std::unique_ptr<Tool> MakeKillBashTool();

// BackgroundJobs runs `Bash` commands with run_in_background in the sandbox, each on a thread of
// its own, their output appended to a log file under `dir` (bound writable inside the sandbox;
// ids continue after the logs already there, so a reopened session keeps its earlier ones).
// A job is stopped by a kill file that a small supervisor inside the sandbox watches; KillAll (and
// the destructor) stop every job and wait for their threads.
class BackgroundJobs {
 public:
  explicit BackgroundJobs(fs::path dir);
  ~BackgroundJobs();
  BackgroundJobs(const BackgroundJobs&) = delete;
  BackgroundJobs& operator=(const BackgroundJobs&) = delete;

  // Start returns the new job's id ("bash_1", ...).
  Result<std::string> Start(const std::string& command, double timeout_s,
                            const ToolContext& context);
  // Output returns the output since the last call and the job's state.
  Result<std::string> Output(const std::string& id);
  Result<std::string> Kill(const std::string& id);
  void KillAll();
  size_t Running() const;

 private:
  struct Job;
  std::string StateText(const Job& job) const;
  fs::path dir_;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Job>> jobs_;
  int next_id_ = 0;
};

// --- helpers shared by the tools (tools.cc), exposed for tests ---

// ResolveWorkspacePath maps a path argument (relative to the workspace, or absolute) to an absolute
// path inside the workspace; anything that leaves it (.., a symbolic link) is refused.
Result<fs::path> ResolveWorkspacePath(const ToolContext& context, const std::string& path);
// IsProtectedPath: model.py, binding.cpp, binding_registry.h, SKILL.md, utils/**, .cuda-agent/**
// (relative to the workspace).
bool IsProtectedPath(const fs::path& relative);
// CapOutput keeps the head and the tail of a long text and says how much was cut.
std::string CapOutput(const std::string& text, size_t cap_chars);
// ValidUtf8 replaces bytes that are not valid UTF-8 with U+FFFD (observations go into JSON).
std::string ValidUtf8(const std::string& text);
// ValidateArguments checks an argument object against a tool's JSON Schema (object, required keys,
// types of properties, nested arrays of objects); the message names the first violation.
Status ValidateArguments(const Json& schema, const Json& arguments, const std::string& where = "");

}  // namespace cuda_agent
