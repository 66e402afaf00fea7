// lease.cc — shared/exclusive device leases from two flock files: a gate that an exclusive request
// holds while it waits (new shared requests queue behind it), and the lock itself.
#include "gpu/lease.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace cuda_agent {
namespace {

Result<int> OpenLockFile(const fs::path& path) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return FailedPrecondition("cannot open lease file " + path.string() + ": " +
                              std::strerror(errno));
  return fd;
}

Status Lock(int fd, int op, const fs::path& path) {
  while (flock(fd, op) != 0) {
    if (errno != EINTR) return Internal("flock " + path.string() + ": " + std::strerror(errno));
  }
  return OkStatus();
}

}  // namespace

const char* LeaseModeName(LeaseMode mode) {
  return mode == LeaseMode::kExclusive ? "exclusive" : "shared";
}

std::string LeaseKey(Device device) {
  if (device == Device::kCpu) return "cpu";
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string key = visible && *visible ? visible : "all";
  for (char& c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
  }
  return "cuda-" + key;
}

Result<DeviceLease> DeviceLease::Acquire(const std::string& key, LeaseMode mode,
                                         const fs::path& dir_in) {
  auto start = std::chrono::steady_clock::now();
  fs::path dir =
      dir_in.empty() ? fs::path("/tmp/cuda-agent-" + std::to_string(geteuid())) / "leases" : dir_in;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return FailedPrecondition("cannot create " + dir.string() + ": " + ec.message());
  fs::path gate_path = dir / (key + ".gate");
  fs::path lock_path = dir / (key + ".lock");
  Result<int> gate = OpenLockFile(gate_path);
  if (!gate.ok()) return gate.status();
  Result<int> lock = OpenLockFile(lock_path);
  if (!lock.ok()) {
    close(gate.value());
    return lock.status();
  }
  Status s;
  if (mode == LeaseMode::kExclusive) {
    // Hold the gate while waiting, so that no new shared lease starts before this one.
    s = Lock(gate.value(), LOCK_EX, gate_path);
    if (s.ok()) s = Lock(lock.value(), LOCK_EX, lock_path);
  } else {
    s = Lock(gate.value(), LOCK_SH, gate_path);  // waits while an exclusive request queues
    if (s.ok()) {
      flock(gate.value(), LOCK_UN);
      s = Lock(lock.value(), LOCK_SH, lock_path);
    }
  }
  close(gate.value());  // releases the gate (the lock stays with its own descriptor)
  if (!s.ok()) {
    close(lock.value());
    return s;
  }
  DeviceLease lease;
  lease.fd_ = lock.value();
  lease.mode_ = mode;
  lease.waited_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return lease;
}

DeviceLease::DeviceLease(DeviceLease&& other) noexcept
    : fd_(other.fd_),
      mode_(other.mode_),
      waited_seconds_(other.waited_seconds_),
      on_release_(std::move(other.on_release_)) {
  other.fd_ = -1;
  other.on_release_ = nullptr;
}

DeviceLease::~DeviceLease() {
  if (on_release_) on_release_();
  if (fd_ >= 0) close(fd_);
}

}  // namespace cuda_agent
