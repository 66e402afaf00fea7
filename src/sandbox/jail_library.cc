// jail_library.cc — the C entry point of libcuda_agent_jail.so, which the Python fork server loads
// with ctypes (python/cuda_agent_harness/forkserver.py) to enter the jail in each forked child.
#include <cstring>

#include "sandbox/jail.h"

namespace {

void CopyMessage(const std::string& text, char* out, int out_len) {
  if (out == nullptr || out_len <= 0) return;
  size_t n = std::min(text.size(), static_cast<size_t>(out_len - 1));
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

}  // namespace

// cuda_agent_enter_jail: `spec_json` as JailSpecToJson writes it. Returns 0 in the jailed job;
// returns 1 with `error` filled when the jail could not be entered (nothing was forked yet). The
// waiting outer process never returns (jail.h). A C symbol that Python finds by this name (ctypes).
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" __attribute__((visibility("default"))) int cuda_agent_enter_jail(const char* spec_json,
                                                                            int ready_fd,
                                                                            char* error,
                                                                            int error_len) {
  try {
    cuda_agent::Result<cuda_agent::Json> parsed =
        cuda_agent::ParseJson(spec_json ? spec_json : "", "jail spec");
    if (!parsed.ok()) {
      CopyMessage(parsed.status().message(), error, error_len);
      return 1;
    }
    cuda_agent::Result<cuda_agent::JailSpec> spec = cuda_agent::JailSpecFromJson(parsed.value());
    if (!spec.ok()) {
      CopyMessage(spec.status().message(), error, error_len);
      return 1;
    }
    cuda_agent::Status s = cuda_agent::EnterJail(spec.value(), ready_fd);
    if (!s.ok()) {
      CopyMessage(s.message(), error, error_len);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    CopyMessage(std::string("jail: ") + e.what(), error, error_len);
    return 1;
  }
}
