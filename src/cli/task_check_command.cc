// task_check_command.cc — the printing side of `cuda-agent tasks check`.
#include "cli/task_check_command.h"

#include <iostream>

#include "cli/exit_status.h"
#include "common/fs.h"

namespace cuda_agent {

int TaskCheckCommand(const TaskCheckRequest& request) {
  const char* me = "cuda-agent tasks check: ";
  Result<std::vector<Task>> suite = LoadSuite(request.suite);
  if (!suite.ok()) {
    std::cerr << me << suite.status().message() << "\n";
    return kExitTaskError;
  }
  std::vector<Task> tasks = SelectTasks(suite.value(), request.select, request.limit);
  if (tasks.empty()) {
    std::cerr << me << "no task matches\n";
    return kExitUsage;
  }
  Result<HarnessEnv> env = HarnessEnv::Discover();
  if (!env.ok()) {
    std::cerr << me << env.status().message() << "\n";
    return kExitInternal;
  }
  TaskCheckOptions opt = request.options;
  size_t done = 0;
  opt.on_record = [&](const Json& record, const Json& report) {
    ++done;
    std::cerr << "[" << done << "/" << tasks.size() << "] " << record.value("name", "") << ": "
              << DescribeRecord(record) << std::endl;
    // A partial report after every task: an interrupted run still leaves what it found.
    if (!request.out.empty()) (void)WriteFileAtomic(request.out, FormatTaskCheckMarkdown(report));
  };
  Result<Json> report = RunTaskCheck(env.value(), request.suite.string(), tasks, opt);
  if (!report.ok()) {
    std::cerr << me << report.status().message() << "\n";
    return report.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitInternal;
  }
  std::string markdown = FormatTaskCheckMarkdown(report.value());
  if (!request.out.empty()) {
    Status written = WriteFileAtomic(request.out, markdown);
    if (!written.ok()) {
      std::cerr << me << written.message() << "\n";
      return kExitInternal;
    }
  }
  if (request.json) {
    std::cout << report->dump(2) << "\n";
  } else if (request.out.empty()) {
    std::cout << markdown;
  }
  const Json& c = report.value()["counts"];
  std::cerr << c.value("tasks", 0) << " tasks: " << c.value("checked", 0) << " checked, "
            << c.value("flagged", 0) << " flagged, " << c.value("failed", 0) << " failed to run, "
            << c.value("malformed", 0) << " malformed\n";
  return 0;
}

}  // namespace cuda_agent
