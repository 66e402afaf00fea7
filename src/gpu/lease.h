// lease.h — per-device leases between every judgement on a machine (threads and processes alike):
// *shared* for correctness work (reference outputs, verification, comparison on the GPU),
// *exclusive* for timing (profiles), so no two timings overlap on one device and nothing else runs
// on it while one is measured. A waiting exclusive request holds back new shared ones, so timings
// are not starved by a stream of verifications. The leases are file locks (flock) under
// /tmp/cuda-agent-<uid>/leases/: a holder that dies releases its lease with its descriptors.
//
// Gathering (LeaseGather, the judge's --lease-gather K,T, 4,1 by default): an exclusive request on
// a busy device first waits without holding new shared leases back, until K timings wait, the
// oldest has waited T seconds, or a batch is already queued; then the waiting timings go one after
// another before any new shared lease. Shared work then starts beside the running shared work
// instead of draining once per timing (docs/decisions/leases.md).
//
//   Result<DeviceLease> l = DeviceLease::Acquire(LeaseKey(Device::kCuda), LeaseMode::kExclusive);
//   ... time the candidate ...;   // released when `l` goes away
#pragma once

#include <functional>
#include <string>

#include "common/device.h"
#include "common/fs.h"
#include "common/status.h"

namespace cuda_agent {

enum class LeaseMode { kShared, kExclusive };

const char* LeaseModeName(LeaseMode mode);

// LeaseGather: how exclusive requests gather into batches; timings == 0 is off (the judge's
// default is JudgeOptions::lease_gather; a lease asked without one does not gather).
struct LeaseGather {
  int timings = 0;        // K: this many waiting timings start a batch
  double max_wait_s = 0;  // T: or the oldest has waited this long
  bool on() const { return timings > 0; }
};

// ParseLeaseGather reads "K,T" (K ≥ 1 timings, T > 0 seconds); empty or "0" is off.
Result<LeaseGather> ParseLeaseGather(const std::string& text);

class DeviceLease {
 public:
  // Acquire blocks until the lease is granted. `dir` empty: /tmp/cuda-agent-<uid>/leases.
  // `gather` null: no gathering.
  static Result<DeviceLease> Acquire(const std::string& key, LeaseMode mode,
                                     const fs::path& dir = {}, const LeaseGather* gather = nullptr);

  DeviceLease(DeviceLease&& other) noexcept;
  DeviceLease& operator=(DeviceLease&& other) = delete;
  DeviceLease(const DeviceLease&) = delete;
  ~DeviceLease();

  LeaseMode mode() const { return mode_; }
  double waited_seconds() const { return waited_seconds_; }
  // OnRelease: `f` runs when the lease ends, just before the lock is released (so that a time it
  // records is not after the next holder's grant), e.g. to record how long it was held.
  void OnRelease(std::function<void()> f) { on_release_ = std::move(f); }

 private:
  DeviceLease() = default;
  int fd_ = -1;
  int mark_fd_ = -1;  // a gathered timing's mark (held until the lease ends), else -1
  fs::path mark_path_;
  LeaseMode mode_ = LeaseMode::kShared;
  double waited_seconds_ = 0;
  std::function<void()> on_release_;
};

// LeaseKey names the device a judgement uses: "cuda-<CUDA_VISIBLE_DEVICES or all>" or "cpu".
std::string LeaseKey(Device device);

// DeviceIdle: whether no lease of `key` is held or asked for at this moment, for work worth
// adding to a lease only where it can delay nobody (a judgement alone on its device). A look,
// not a lease: it waits for nothing and holds nothing afterwards; true where the lease files do
// not exist yet. `dir` as for Acquire.
bool DeviceIdle(const std::string& key, const fs::path& dir = {});

}  // namespace cuda_agent
