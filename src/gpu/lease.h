// lease.h — per-device leases between every judgement on a machine (threads and processes alike):
// *shared* for correctness work (reference outputs, verification, comparison on the GPU),
// *exclusive* for timing (profiles), so no two timings overlap on one device and nothing else runs
// on it while one is measured. A waiting exclusive request holds back new shared ones, so timings
// are not starved by a stream of verifications. The leases are file locks (flock) under
// /tmp/cuda-agent-<uid>/leases/: a holder that dies releases its lease with its descriptors.
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

class DeviceLease {
 public:
  // Acquire blocks until the lease is granted. `dir` empty: /tmp/cuda-agent-<uid>/leases.
  static Result<DeviceLease> Acquire(const std::string& key, LeaseMode mode,
                                     const fs::path& dir = {});

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
  LeaseMode mode_ = LeaseMode::kShared;
  double waited_seconds_ = 0;
  std::function<void()> on_release_;
};

// LeaseKey names the device a judgement uses: "cuda-<CUDA_VISIBLE_DEVICES or all>" or "cpu".
std::string LeaseKey(Device device);

}  // namespace cuda_agent
