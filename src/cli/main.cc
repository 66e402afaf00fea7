// main.cc — `cuda-agent <command> ...`: dispatches to the subcommands in commands.h.
#include <signal.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "agent/judge_gateway.h"
#include "cli/commands.h"
#include "cli/exit_status.h"
#include "cli/options.h"
#include "common/host_environment.h"
#include "judge/judge.h"
#include "sandbox/sandbox.h"

namespace {

constexpr const char* kUsage =
    R"(cuda-agent — judge, build and benchmark custom CUDA kernels for PyTorch programs

usage: cuda-agent <command> [options]

commands:
  judge      compile, verify, profile and reward one candidate
             cuda-agent judge --task TASK --candidate DIR [--device cuda|cpu] [--json]
  build      compile a candidate into cuda_extension.so
             cuda-agent build --candidate DIR [--device cuda|cpu] --out FILE
  profile    Nsight Compute on the candidate's own kernels: speed of light, occupancy, bound, hint
             cuda-agent profile --ncu --task TASK --candidate DIR [--device cuda|cpu] [--json]
  workspace  make an agent workspace for a task
             cuda-agent workspace init --task TASK [--device cuda|cpu] DIR
             cuda-agent workspace import FILE.py DIR   (a KernelBench load_inline solution)
  baselines  time the eager and torch.compile versions of a suite's tasks (stored, resumable)
             cuda-agent baselines SUITE [--levels 1,2,3] [--jobs N] [--force] [--device cuda|cpu] [--json]
             cuda-agent baselines export [--out FILE.jsonl] | baselines import FILE.jsonl
  bench      solve and judge every task of a suite; the paper's metrics; md/json/html reports
             cuda-agent bench SUITE --solver solutions:DIR|agent:MODEL [--levels 1,2,3] [--jobs N] [--out DIR]
  tasks      list the tasks of a suite (file, KernelBench folder, JSONL)
             cuda-agent tasks list SUITE [--json]
  synth      compose and filter fresh fused-op training tasks (resumable)
             cuda-agent synth --out DIR [--count N] [--max-ops 5] [--decontaminate SUITE] [--device cuda|cpu] [--seed S]
  solve      run the agent on a task: a workspace, the model's tool calls, the final judgement
             cuda-agent solve TASK --model SPEC [--device cuda|cpu] [--max-turns N] [--out DIR] [--json]
  serve      the environment as an HTTP service: sessions, tool calls, grades (docs/server.md)
             cuda-agent serve [--port 8377] [--token T] [--device cuda|cpu] [--state-dir DIR]
  mcp        serve one task's environment to an MCP client over stdio (Claude Code, Cursor, ...)
             cuda-agent mcp --task TASK [--device cuda|cpu] [--state-dir DIR]
  rft        rejection fine-tuning data: filter agent trajectories into SFT chat rows
             cuda-agent rft INPUT... --out DIR [--min-reward R] [--parquet] [--strict] [--json]
  export     a suite as verl's RL dataset (parquet: prompt, data_source, reward_model, extra_info)
             cuda-agent export verl SUITE --out FILE.parquet [--mode single|agent] [--device cuda|cpu]
  llm        send one request to a model spec (with a dummy echo tool) to check it before a solve
             cuda-agent llm --model openai:URL#MODEL|anthropic:MODEL|replay:FILE [--prompt TEXT] [--no-stream] [--json]
  worker     judge jobs from a Redis queue (one consumer per GPU; docs/scaling.md)
             cuda-agent worker --redis redis://HOST:PORT/DB [--device cuda|cpu] [--gpus 0,1] [--consumers N]
  queue      the Redis queue: workers and lengths, judge one candidate through it, measure it
             cuda-agent queue status|dead|submit|bench --redis URL [--task TASK --candidate DIR] [--noop]
  sandbox    run a command contained (namespaces, read-only root, limits, watchdog)
             cuda-agent sandbox run [--writable DIR] [--gpu] [--timeout S] -- COMMAND...
             cuda-agent sandbox info
  version    print the version

`cuda-agent <command> --help` lists a command's options. Exit status: 0 a verdict or success,
2 usage error, 3 task error, 4 internal failure (docs/cli.md).
)";

}  // namespace

int Main(int argc, char** argv);

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "cuda-agent: internal error: " << e.what() << "\n";
    return cuda_agent::kExitInternal;
  }
}

int Main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  // The one read of the host's environment (common/host_environment.h); options are flags.
  cuda_agent::CaptureHostEnvironment();
  if (argc < 2) {
    std::cerr << kUsage;
    return cuda_agent::kExitUsage;
  }
  std::string command = argv[1];
  cuda_agent::Args args(argv + 2, argv + argc);
  // The jail backend of the sandbox re-executes this binary (sandbox/sandbox.h); not for people.
  if (command == "__jail") return cuda_agent::RunJailed(args);
  // A worker's judgement of one job (queue/worker.h); not for people.
  if (command == "__judge-job") return cuda_agent::JudgeJobCommand(args);
  if (cuda_agent::AsksForHelp(args)) {
    std::cout << kUsage;
    return 0;
  }
  // Inside an agent's sandbox, build, judge and profile go to the solve process
  // (agent/judge_gateway.h).
  if (const char* gateway = std::getenv(cuda_agent::kJudgeGatewayEnv);
      gateway != nullptr && *gateway != '\0' &&
      (command == "judge" || command == "build" || command == "profile")) {
    return cuda_agent::RunViaJudgeGateway(gateway, command, args);
  }
  if (command == "judge") return cuda_agent::JudgeCommand(args);
  if (command == "build") return cuda_agent::BuildCommand(args);
  if (command == "profile") return cuda_agent::ProfileCommand(args);
  if (command == "workspace") return cuda_agent::WorkspaceCommand(args);
  if (command == "tasks") return cuda_agent::TasksCommand(args);
  if (command == "baselines") return cuda_agent::BaselinesCommand(args);
  if (command == "bench") return cuda_agent::BenchCommand(args);
  if (command == "sandbox") return cuda_agent::SandboxCommand(args);
  if (command == "synth") return cuda_agent::SynthCommand(args);
  if (command == "llm") return cuda_agent::LlmCommand(args);
  if (command == "solve") return cuda_agent::SolveCommand(args);
  if (command == "serve") return cuda_agent::ServeCommand(args);
  if (command == "mcp") return cuda_agent::McpCommand(args);
  if (command == "worker") return cuda_agent::WorkerCommand(args);
  if (command == "queue") return cuda_agent::QueueCommand(args);
  if (command == "rft") return cuda_agent::RftCommand(args);
  if (command == "export") return cuda_agent::ExportCommand(args);
  if (command == "version" || command == "--version") {
    std::cout << "cuda-agent " << CUDA_AGENT_VERSION << "\n";
    return 0;
  }
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << "cuda-agent: unknown command '" << command << "'\n\n" << kUsage;
  return cuda_agent::kExitUsage;
}
