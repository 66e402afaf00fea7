// progress.cc — the progress model and its two views.
#include "eval/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>

namespace cuda_agent {

ProgressModel::ProgressModel(int total, int resumed) {
  state_.total = total;
  state_.resumed = resumed;
}

ProgressSnapshot ProgressModel::Start() const { return state_; }

ProgressSnapshot ProgressModel::TaskDone(const std::string& task, const std::string& outcome,
                                         bool ok, double now_s) {
  ++state_.done;
  if (!ok) ++state_.failed;
  state_.elapsed_s = now_s;
  state_.task = task;
  state_.outcome = outcome;
  const int remaining = state_.total - state_.Finished();
  state_.eta_s = now_s / state_.done * std::max(remaining, 0);
  return state_;
}

std::string FormatDuration(double seconds) {
  long s = std::lround(std::max(seconds, 0.0));
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof(buf), "%lds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof(buf), "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  }
  return buf;
}

namespace {

std::string Counts(const ProgressSnapshot& s) {
  std::string text = std::to_string(s.Finished()) + "/" + std::to_string(s.total);
  if (s.failed > 0) text += "  " + std::to_string(s.failed) + " failed";
  if (s.resumed > 0) text += "  " + std::to_string(s.resumed) + " resumed";
  return text;
}

std::string Eta(const ProgressSnapshot& s) {
  return s.eta_s ? "ETA " + FormatDuration(*s.eta_s) : "ETA ?";
}

class TerminalBar : public ProgressView {
 public:
  TerminalBar(std::ostream& out, int width) : out_(out), width_(width) {}
  void Start(const ProgressSnapshot& s) override { Draw(s); }
  void Update(const ProgressSnapshot& s) override { Draw(s); }
  void End(const ProgressSnapshot& s) override {
    Draw(s);
    out_ << "\n" << std::flush;
  }

 private:
  void Draw(const ProgressSnapshot& s) {
    out_ << "\r" << FormatBar(s, width_) << "\x1b[K" << std::flush;
  }
  std::ostream& out_;
  int width_;
};

class LogLines : public ProgressView {
 public:
  explicit LogLines(std::ostream& out) : out_(out) {}
  void Start(const ProgressSnapshot& s) override {
    out_ << s.total << " tasks";
    if (s.resumed > 0) out_ << ", " << s.resumed << " already finished (resumed from the store)";
    out_ << std::endl;
  }
  void Update(const ProgressSnapshot& s) override { out_ << FormatLogLine(s) << std::endl; }
  void End(const ProgressSnapshot& s) override {
    out_ << "finished " << s.done << " tasks in " << FormatDuration(s.elapsed_s) << " (" << s.failed
         << " failed)" << std::endl;
  }

 private:
  std::ostream& out_;
};

}  // namespace

std::string FormatBar(const ProgressSnapshot& s, int width) {
  constexpr int kBar = 24;
  const int filled = s.total > 0 ? s.Finished() * kBar / s.total : kBar;
  std::string line = "[" + std::string(filled, '#') + std::string(kBar - filled, '.') + "] " +
                     Counts(s) + "  " + Eta(s);
  if (!s.task.empty()) line += "  " + s.task + ": " + s.outcome;
  if (static_cast<int>(line.size()) > width) line.resize(width);
  return line;
}

std::string FormatLogLine(const ProgressSnapshot& s) {
  return "[" + std::to_string(s.Finished()) + "/" + std::to_string(s.total) + "] " + s.task + ": " +
         s.outcome + " (" + Eta(s) + ")";
}

std::unique_ptr<ProgressView> MakeTerminalBar(std::ostream& out, int width) {
  return std::make_unique<TerminalBar>(out, width);
}

std::unique_ptr<ProgressView> MakeLogLines(std::ostream& out) {
  return std::make_unique<LogLines>(out);
}

std::unique_ptr<ProgressView> MakeProgressView(std::ostream& err) {
  if (&err == &std::cerr && isatty(STDERR_FILENO)) return MakeTerminalBar(err);
  return MakeLogLines(err);
}

Progress::Progress(int total, int resumed, std::unique_ptr<ProgressView> view)
    : model_(total, resumed), last_(model_.Start()), view_(std::move(view)) {
  view_->Start(last_);
}

void Progress::TaskDone(const std::string& task, const std::string& outcome, bool ok) {
  std::lock_guard<std::mutex> lock(mutex_);
  double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  last_ = model_.TaskDone(task, outcome, ok, now);
  view_->Update(last_);
}

void Progress::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  closed_ = true;
  last_.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  view_->End(last_);
}

}  // namespace cuda_agent
