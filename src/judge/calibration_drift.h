// calibration_drift.h — whether the device moved since stored baselines were measured, decided from
// several calibration samples rather than one. Each judgement times a fixed copy and GEMM (the
// calibration, taken in the candidate's profile); one sample is noisy — on a busy CPU host the same
// copy reads 0.7 to 20 ms from one judgement to the next — so comparing the last sample with the
// one stored with the baselines re-measured them in almost every judgement. The rule here:
//
//   - level: the median of this device's last kWindow samples (this judgement's the newest); fewer
//     than kMinSamples decide nothing (the stored baselines are used);
//   - threshold: the bound (--baseline-drift) or kNoiseZ times the samples' own noise, whichever is
//     larger. The noise (of one sample's logarithm) is read from the last kHistory samples twice —
//     from their spread around their median and from the changes between consecutive ones — and
//     the larger taken: a short history can make either read low, and a level step (a real
//     change) moves neither much while it is the minority of the history;
//   - hysteresis: the level must be beyond the threshold at this judgement and at the one before
//     (its window without the newest sample), and the newest sample beyond it on the same side too
//     (a load burst that has just ended re-measures nothing); re-measured baselines store the level
//     as their reference, not their own single sample, so the next judgement does not flip back.
//
// A different device or a 2x slowdown moves the level by ln 2 or more and is re-measured on the
// fourth judgement after the change unless the samples' noise is as large as the change itself.
// Simulated over 300,000 judgements of jitter (±4%, ±30%, log-normal 20%) and one-sided load
// noise, it re-measured twice; the single-sample rule, most judgements (docs/decisions/
// baseline-drift.md).
//
//   CalibrationDrift d = DecideCalibrationDrift(stored_copy_us, recent_copy_us, 0.10);
//   if (d.drifted) Remeasure(d.Describe("copy_us"));
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cuda_agent {

constexpr size_t kCalibrationWindow = 5;      // samples whose median is the device's level
constexpr size_t kCalibrationMinSamples = 4;  // fewer decide nothing (3 for a level, 1 to confirm)
constexpr size_t kCalibrationHistory = 32;    // samples the noise is read from
constexpr double kCalibrationNoiseZ = 4;      // the threshold in units of the samples' noise

struct CalibrationDrift {
  bool drifted = false;
  size_t samples = 0;    // samples in the window
  double reference = 0;  // µs, what the baselines were stored with
  double level = 0;      // µs, the window's median (0 when there are no samples)
  double threshold = 0;  // relative: exp(log threshold) - 1
  bool too_few = false;  // fewer than kCalibrationMinSamples: nothing decided
  // Describe: one line for the judgement's notes, e.g. "the device's copy_us calibration moved from
  // 100.00 to 200.00 us (median of the last 5 judgements) since they were measured (more than
  // 10%)".
  std::string Describe(const std::string& key) const;
};

// DecideCalibrationDrift: `reference` is the calibration (µs) stored with the baselines; `recent`
// this device's samples (µs), oldest first, this judgement's last (at most kCalibrationHistory are
// read); `bound` the relative change --baseline-drift allows. Non-positive samples are ignored; a
// non-positive reference is drift (nothing to compare with).
CalibrationDrift DecideCalibrationDrift(double reference, const std::vector<double>& recent,
                                        double bound);

// CalibrationLevel: the median of the last kCalibrationWindow positive samples (0 when none) — the
// reference re-measured baselines are stored with.
double CalibrationLevel(const std::vector<double>& recent);

}  // namespace cuda_agent
