// progress.h — the progress of a suite run, modelled once (ProgressModel: how many tasks are done,
// resumed from the store, failed; the ETA) and rendered separately by a ProgressView: a bar redrawn
// in place when stderr is a terminal, one plain line per finished task otherwise (logs, CI).
//
//   Progress progress(tasks.size(), resumed, MakeProgressView(std::cerr));
//   progress.TaskDone("level1/19_ReLU", "correct, 1.52x vs eager", /*ok=*/true);   // any thread
//   progress.Close();
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>

namespace cuda_agent {

// ProgressSnapshot is the model's state after an event.
struct ProgressSnapshot {
  int total = 0;    // tasks in the run
  int resumed = 0;  // found finished in the store: not run again
  int done = 0;     // finished in this session
  int failed = 0;   // of `done`, those that did not succeed
  double elapsed_s = 0;
  std::optional<double> eta_s;  // from this session's pace; unknown before the first task ends
  std::string task;             // the task that just finished
  std::string outcome;          // its one-line outcome

  int Finished() const { return resumed + done; }
};

// ProgressModel counts; time comes from the caller so that the model is a pure function of events.
class ProgressModel {
 public:
  ProgressModel(int total, int resumed);
  ProgressSnapshot Start() const;
  ProgressSnapshot TaskDone(const std::string& task, const std::string& outcome, bool ok,
                            double now_s);

 private:
  ProgressSnapshot state_;
};

// FormatDuration: "42s", "4m12s", "2h05m".
std::string FormatDuration(double seconds);

// ProgressView renders snapshots.
class ProgressView {
 public:
  virtual ~ProgressView() = default;
  virtual void Start(const ProgressSnapshot& s) = 0;
  virtual void Update(const ProgressSnapshot& s) = 0;
  virtual void End(const ProgressSnapshot& s) = 0;
};

// TerminalBar redraws one line: "[#####.....] 12/250  3 failed  ETA 4m12s  level1/19_ReLU: ...".
std::unique_ptr<ProgressView> MakeTerminalBar(std::ostream& out, int width = 100);
// LogLines prints one line per finished task: "[12/250] level1/19_ReLU: correct ... (ETA 4m12s)".
std::unique_ptr<ProgressView> MakeLogLines(std::ostream& out);
// MakeProgressView picks the bar when stderr is a terminal, log lines otherwise.
std::unique_ptr<ProgressView> MakeProgressView(std::ostream& err);

// The pure renderings, for tests.
std::string FormatBar(const ProgressSnapshot& s, int width);
std::string FormatLogLine(const ProgressSnapshot& s);

// Progress ties a model to a view and a clock; TaskDone may be called from any thread.
class Progress {
 public:
  Progress(int total, int resumed, std::unique_ptr<ProgressView> view);
  void TaskDone(const std::string& task, const std::string& outcome, bool ok);
  void Close();

 private:
  std::mutex mutex_;
  ProgressModel model_;
  ProgressSnapshot last_;
  std::unique_ptr<ProgressView> view_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  bool closed_ = false;
};

}  // namespace cuda_agent
