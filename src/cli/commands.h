// commands.h — the subcommands of the `cuda-agent` binary. Each takes the arguments after its name
// and returns the process exit status (docs/cli.md).
#pragma once

#include <string>
#include <vector>

namespace cuda_agent {

using Args = std::vector<std::string>;

int JudgeCommand(const Args& args);
int BuildCommand(const Args& args);
int WorkspaceCommand(const Args& args);
int TasksCommand(const Args& args);
int BaselinesCommand(const Args& args);  // eval_commands.cc
int BenchCommand(const Args& args);      // eval_commands.cc
int SandboxCommand(const Args& args);
int SynthCommand(const Args& args);
int LlmCommand(const Args& args);       // llm_command.cc
int SolveCommand(const Args& args);     // solve_command.cc
int McpCommand(const Args& args);       // mcp_command.cc
int ServeCommand(const Args& args);     // serve_command.cc
int WorkerCommand(const Args& args);    // dist_commands.cc
int QueueCommand(const Args& args);     // dist_commands.cc
int JudgeJobCommand(const Args& args);  // dist_commands.cc (hidden: a worker's judgement)
int RftCommand(const Args& args);       // rft_command.cc
int ExportCommand(const Args& args);    // export_command.cc
int ProfileCommand(const Args& args);   // profile_command.cc (ncu)

}  // namespace cuda_agent
