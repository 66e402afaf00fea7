// device.cc — device names.
#include "common/device.h"

namespace cuda_agent {

const char* DeviceName(Device device) { return device == Device::kCuda ? "cuda" : "cpu"; }

Result<Device> ParseDevice(const std::string& name) {
  if (name == "cuda" || name == "gpu") return Device::kCuda;
  if (name == "cpu") return Device::kCpu;
  return InvalidArgument("unknown device '" + name + "' (expected cuda or cpu)");
}

}  // namespace cuda_agent
