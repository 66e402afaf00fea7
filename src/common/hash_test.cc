// hash_test.cc — SHA-256 against the FIPS 180-4 test vectors.
#include "common/hash.h"

#include <gtest/gtest.h>

#include "common/fs.h"

namespace cuda_agent {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  std::string text(1000, 'x');
  for (size_t split : {0, 1, 55, 56, 63, 64, 65, 999}) {
    Sha256 h;
    h.Update(std::string_view(text).substr(0, split));
    h.Update(std::string_view(text).substr(split));
    EXPECT_EQ(h.HexDigest(), Sha256Hex(text)) << "split at " << split;
  }
}

TEST(Sha256, File) {
  fs::path dir = MakeTempDir(fs::temp_directory_path(), "hash-test").value();
  ASSERT_TRUE(WriteFileAtomic(dir / "f", "abc").ok());
  EXPECT_EQ(Sha256File(dir / "f").value(), Sha256Hex("abc"));
  EXPECT_FALSE(Sha256File(dir / "missing").ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cuda_agent
