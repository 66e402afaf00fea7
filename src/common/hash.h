// hash.h — SHA-256 (our own implementation) for content addressing: task ids, candidate hashes,
// build-cache keys, protected-file fingerprints.
//
//   Sha256 h; h.Update("abc"); std::string hex = h.HexDigest();
//   std::string id = Sha256Hex(code).substr(0, 16);
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace cuda_agent {

// Sha256 is an incremental SHA-256 (FIPS 180-4).
class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  // Finish returns the 32-byte digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> Finish();
  std::string HexDigest();

 private:
  void Compress(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffer_len_ = 0;
  uint64_t total_len_ = 0;
};

// Sha256Hex hashes a whole string.
std::string Sha256Hex(std::string_view data);
// Sha256File hashes a file's bytes.
Result<std::string> Sha256File(const std::string& path);

}  // namespace cuda_agent
