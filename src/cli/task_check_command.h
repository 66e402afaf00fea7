// task_check_command.h — `cuda-agent tasks check SUITE`: runs judge/task_check over a suite, prints
// a line per finished task, rewrites the markdown report after each one and prints the report
// (markdown, or JSON with --json) at the end.
#pragma once

#include <string>

#include "judge/task_check.h"

namespace cuda_agent {

// TaskCheckRequest is what `cuda-agent tasks check` asks for; TaskCheckCommand runs it and returns
// the exit status: 0 when the check ran (flagged tasks are findings), 2 usage, 3 the suite cannot
// be read, 4 an internal failure.
struct TaskCheckRequest {
  fs::path suite;
  std::string select;
  int limit = 0;
  fs::path out;       // the markdown report (rewritten as tasks finish); empty: stdout unless json
  bool json = false;  // the report as JSON on stdout
  TaskCheckOptions options;
};
int TaskCheckCommand(const TaskCheckRequest& request);

}  // namespace cuda_agent
