// python_step.cc — `python -m MODULE` with the project's python/ folder on the path.
#include "cli/python_step.h"

#include <cstdlib>

#include "common/host_environment.h"
#include "common/subprocess.h"
#include "harness/client.h"

namespace cuda_agent {

Status RunPythonStep(const std::vector<std::string>& module_and_args) {
  Result<HarnessEnv> env = HarnessEnv::Discover();
  if (!env.ok()) return env.status();
  RunOptions options;
  options.argv = {env->python, "-m"};
  options.argv.insert(options.argv.end(), module_and_args.begin(), module_and_args.end());
  std::string pythonpath = (env->home / "python").string();
  if (const std::string& old = HostValue(HostVar::kPythonPath); !old.empty())
    pythonpath += ":" + old;
  options.env_set = {"PYTHONPATH=" + pythonpath, "PYTHONDONTWRITEBYTECODE=1"};
  options.timeout_seconds = 3600;
  Result<RunResult> run = RunProcess(options);
  if (!run.ok()) return run.status();
  if (!run->Succeeded()) {
    return FailedPrecondition("python -m " + module_and_args.front() + " failed (" +
                              run->Describe() + "): " + run->err);
  }
  return OkStatus();
}

}  // namespace cuda_agent
