// lease.cc — shared/exclusive device leases from two flock files: a gate that an exclusive request
// holds while it waits (new shared requests queue behind it), and the lock itself. With gathering,
// waiting timings instead hold marks (flock'ed files) in <key>.gathering/ and <key>.queued/: a
// shared request waits while a queued mark lives, so a batch of timings runs before any new shared
// lease.
#include "gpu/lease.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/host_environment.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kGatherPoll = std::chrono::milliseconds(2);

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

bool TryLock(int fd, int op) { return flock(fd, op | LOCK_NB) == 0; }

// CountLiveMarks: the marks in `folder` whose owner still holds them; a mark nobody holds (its
// owner died) is removed.
int CountLiveMarks(const fs::path& folder) {
  std::error_code ec;
  int live = 0;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    int fd = open(it->path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // gone meanwhile: granted, moved or removed
    if (TryLock(fd, LOCK_SH)) {
      fs::remove(it->path(), ec);
      ec.clear();
    } else {
      ++live;
    }
    close(fd);
  }
  return live;
}

// A waiting timing's mark: created locked under a temporary name, then renamed into `folder`, so
// that no counter sees it unlocked.
Result<std::pair<fs::path, int>> CreateMark(const fs::path& dir, const std::string& key,
                                            const fs::path& folder) {
  static std::atomic<unsigned> counter{0};
  std::string name = std::to_string(getpid()) + "-" + std::to_string(counter++);
  fs::path tmp = dir / (key + ".mark-" + name);
  int fd = open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return FailedPrecondition("cannot create " + tmp.string() + ": " + std::strerror(errno));
  fs::path mark = folder / name;
  if (flock(fd, LOCK_EX) != 0 || rename(tmp.c_str(), mark.c_str()) != 0) {
    std::string why = std::strerror(errno);
    unlink(tmp.c_str());
    close(fd);
    return Internal("cannot place the lease mark " + mark.string() + ": " + why);
  }
  return std::make_pair(mark, fd);
}

}  // namespace

Result<LeaseGather> ParseLeaseGather(const std::string& text) {
  LeaseGather g;
  if (text.empty() || text == "0") return g;
  size_t comma = text.find(',');
  char* end = nullptr;
  long k = comma == std::string::npos ? 0 : std::strtol(text.c_str(), &end, 10);
  bool k_ok = comma != std::string::npos && end == text.c_str() + comma && k >= 1 && k <= 1024;
  double t = 0;
  if (k_ok) {
    std::string rest = text.substr(comma + 1);
    t = std::strtod(rest.c_str(), &end);
    k_ok = !rest.empty() && end == rest.c_str() + rest.size() && t > 0 && t <= 3600;
  }
  if (!k_ok) {
    return InvalidArgument("--lease-gather \"" + text +
                           "\": expected K,T — K ≥ 1 waiting timings that start a batch, T > 0 "
                           "seconds the oldest may wait (e.g. 4,2); empty or 0 is off");
  }
  g.timings = static_cast<int>(k);
  g.max_wait_s = t;
  return g;
}

const char* LeaseModeName(LeaseMode mode) {
  return mode == LeaseMode::kExclusive ? "exclusive" : "shared";
}

std::string LeaseKey(Device device) {
  if (device == Device::kCpu) return "cpu";
  const std::string& visible = HostValue(HostVar::kCudaVisibleDevices);
  std::string key = !visible.empty() ? visible : "all";
  for (char& c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
  }
  return "cuda-" + key;
}

namespace {

fs::path LeaseDir(const fs::path& dir) {
  return dir.empty() ? fs::path("/tmp/cuda-agent-" + std::to_string(geteuid())) / "leases" : dir;
}

// Unlocked: nobody holds `path` locked in a way that refuses `op` (a look that takes the lock for
// a moment and gives it back).
bool Unlocked(const fs::path& path, int op) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // never made: nobody ever asked
  const bool got = TryLock(fd, op);
  close(fd);  // releases the look's lock
  return got;
}

}  // namespace

bool DeviceIdle(const std::string& key, const fs::path& dir_in) {
  const fs::path dir = LeaseDir(dir_in);
  // Every granted lease holds the lock (shared or exclusive); an exclusive request waits holding
  // the gate, a gathering one (LeaseGather) a mark in one of the two mark folders.
  return Unlocked(dir / (key + ".lock"), LOCK_EX) && Unlocked(dir / (key + ".gate"), LOCK_SH) &&
         CountLiveMarks(dir / (key + ".gathering")) == 0 &&
         CountLiveMarks(dir / (key + ".queued")) == 0;
}

Result<DeviceLease> DeviceLease::Acquire(const std::string& key, LeaseMode mode,
                                         const fs::path& dir_in, const LeaseGather* gather_in) {
  auto start = Clock::now();
  const LeaseGather gather = gather_in != nullptr ? *gather_in : LeaseGather{};
  const fs::path dir = LeaseDir(dir_in);
  fs::path gathering = dir / (key + ".gathering");
  fs::path queued = dir / (key + ".queued");
  // The mark folders only where marks are written: a shared request reads `queued` (missing: none).
  const bool marks = mode == LeaseMode::kExclusive && gather.on();
  std::error_code ec;
  fs::create_directories(marks ? queued : dir, ec);
  if (!ec && marks) fs::create_directories(gathering, ec);
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
  DeviceLease lease;
  lease.fd_ = lock.value();  // closed by `lease` on every path from here
  lease.mode_ = mode;
  Status s;
  if (marks) {
    close(gate.value());  // a gathering timing holds nothing back: its queued mark does
    Result<std::pair<fs::path, int>> mark = CreateMark(dir, key, gathering);
    if (!mark.ok()) return mark.status();
    lease.mark_path_ = mark->first;
    lease.mark_fd_ = mark->second;
    // An idle device is granted at once. Else wait for K timings, the oldest's T or a batch to
    // join, while shared leases go on starting.
    bool granted = TryLock(lease.fd_, LOCK_EX);
    while (!granted) {
      int batch = CountLiveMarks(queued);
      double waited = std::chrono::duration<double>(Clock::now() - start).count();
      if (batch > 0 || waited >= gather.max_wait_s ||
          batch + CountLiveMarks(gathering) >= gather.timings)
        break;
      std::this_thread::sleep_for(kGatherPoll);
      granted = TryLock(lease.fd_, LOCK_EX);
    }
    fs::path in_batch = queued / lease.mark_path_.filename();
    if (rename(lease.mark_path_.c_str(), in_batch.c_str()) != 0)
      return Internal("cannot queue the lease mark " + in_batch.string() + ": " +
                      std::strerror(errno));
    lease.mark_path_ = in_batch;  // held until the lease ends: later timings join the batch
    if (!granted) s = Lock(lease.fd_, LOCK_EX, lock_path);
  } else if (mode == LeaseMode::kExclusive) {
    // Hold the gate while waiting, so that no new shared lease starts before this one.
    s = Lock(gate.value(), LOCK_EX, gate_path);
    if (s.ok()) s = Lock(lease.fd_, LOCK_EX, lock_path);
    close(gate.value());  // releases the gate (the lock stays with its own descriptor)
  } else {
    s = Lock(gate.value(), LOCK_SH, gate_path);  // waits while an exclusive request queues
    close(gate.value());
    while (s.ok() && CountLiveMarks(queued) > 0) std::this_thread::sleep_for(kGatherPoll);
    if (s.ok()) s = Lock(lease.fd_, LOCK_SH, lock_path);
  }
  if (!s.ok()) return s;
  lease.waited_seconds_ = std::chrono::duration<double>(Clock::now() - start).count();
  return lease;
}

DeviceLease::DeviceLease(DeviceLease&& other) noexcept
    : fd_(other.fd_),
      mark_fd_(other.mark_fd_),
      mark_path_(std::move(other.mark_path_)),
      mode_(other.mode_),
      waited_seconds_(other.waited_seconds_),
      on_release_(std::move(other.on_release_)) {
  other.fd_ = -1;
  other.mark_fd_ = -1;
  other.on_release_ = nullptr;
}

DeviceLease::~DeviceLease() {
  if (on_release_) on_release_();
  if (mark_fd_ >= 0) {  // the batch goes on without this timing; shared leases wait for its end
    unlink(mark_path_.c_str());
    close(mark_fd_);
  }
  if (fd_ >= 0) close(fd_);
}

}  // namespace cuda_agent
