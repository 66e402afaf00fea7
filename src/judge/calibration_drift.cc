// calibration_drift.cc — the drift decision of calibration_drift.h.
#include "judge/calibration_drift.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cuda_agent {
namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Positive: the last `n` positive samples, oldest first.
std::vector<double> Positive(const std::vector<double>& recent, size_t n) {
  std::vector<double> out;
  for (auto it = recent.rbegin(); it != recent.rend() && out.size() < n; ++it) {
    if (*it > 0 && std::isfinite(*it)) out.push_back(*it);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

// LogNoise: the standard deviation of one sample's logarithm, read robustly two ways and the larger
// taken. Spread: 1.4826 × the median absolute deviation from the median (a normal's deviation).
// Changes: for independent noise of deviation s a change between consecutive samples has
// deviation s·√2, and its absolute value's median is 0.6745·s·√2.
double LogNoise(const std::vector<double>& samples) {
  if (samples.size() < 3) return 0;
  std::vector<double> logs, deviations, changes;
  for (double s : samples) logs.push_back(std::log(s));
  const double center = Median(logs);
  for (double l : logs) deviations.push_back(std::fabs(l - center));
  for (size_t i = 1; i < logs.size(); ++i) changes.push_back(std::fabs(logs[i] - logs[i - 1]));
  return std::max(1.4826 * Median(deviations), Median(changes) / (0.6745 * std::sqrt(2.0)));
}

// Beyond: the window's level and its newest sample both beyond `log_threshold` from `reference`,
// on the same side.
bool Beyond(double reference, const std::vector<double>& window, double log_threshold) {
  const double moved = std::log(Median(window) / reference);
  const double newest = std::log(window.back() / reference);
  return std::fabs(moved) > log_threshold && std::fabs(newest) > log_threshold &&
         (moved > 0) == (newest > 0);
}

}  // namespace

double CalibrationLevel(const std::vector<double>& recent) {
  return Median(Positive(recent, kCalibrationWindow));
}

CalibrationDrift DecideCalibrationDrift(double reference, const std::vector<double>& recent,
                                        double bound) {
  CalibrationDrift d;
  d.reference = reference;
  const std::vector<double> history = Positive(recent, kCalibrationHistory);
  const std::vector<double> window = Positive(history, kCalibrationWindow);
  d.samples = window.size();
  d.level = Median(window);
  const double log_threshold =
      std::max(std::log1p(std::max(bound, 0.0)), kCalibrationNoiseZ * LogNoise(history));
  d.threshold = std::expm1(log_threshold);
  if (!(reference > 0) || !std::isfinite(reference)) {
    d.drifted = true;
    return d;
  }
  if (history.size() < kCalibrationMinSamples) {
    d.too_few = true;
    return d;
  }
  // This judgement's window, and the one before it (the history without the newest sample).
  const std::vector<double> before =
      Positive(std::vector<double>(history.begin(), history.end() - 1), kCalibrationWindow);
  const double moved = std::log(d.level / reference);
  const double moved_before = std::log(Median(before) / reference);
  d.drifted = Beyond(reference, window, log_threshold) &&
              Beyond(reference, before, log_threshold) && (moved > 0) == (moved_before > 0);
  return d;
}

std::string CalibrationDrift::Describe(const std::string& key) const {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "the device's %s calibration moved from %.2f to %.2f us (median of its last %zu "
                "judgements) since they were measured (more than %.0f%%)",
                key.c_str(), reference, level, samples, 100 * threshold);
  return buf;
}

}  // namespace cuda_agent
