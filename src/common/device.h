// device.h — the two device modes of DESIGN.md §4 (cuda: nvcc and the GPU; cpu: g++ kernels on the
// CPU, how the whole pipeline runs without a GPU), named the same way by every command and record.
#pragma once

#include <string>

#include "common/status.h"

namespace cuda_agent {

enum class Device { kCpu, kCuda };

// DeviceName: "cuda" or "cpu", as flags, JSON records and store keys spell it.
const char* DeviceName(Device device);
// ParseDevice accepts cuda (or gpu) and cpu; anything else is an error naming both.
Result<Device> ParseDevice(const std::string& name);

}  // namespace cuda_agent
