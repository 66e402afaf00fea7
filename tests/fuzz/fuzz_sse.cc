// fuzz_sse.cc — libFuzzer target for the Server-Sent Events parser (src/llm/sse.h): any bytes, in
// any chunking, must parse without a crash to the same events as the whole stream fed at once
// (the parser's documented promise: bytes go in as they arrive).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "llm/sse.h"

using cuda_agent::SseEvent;
using cuda_agent::SseParser;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte chooses the chunking; the rest is the stream.
  size_t step = 1 + data[0] % 17;
  std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);

  SseParser whole;
  std::vector<SseEvent> expected = whole.Feed(stream);

  SseParser chunked;
  std::vector<SseEvent> got;
  for (size_t pos = 0; pos < stream.size(); pos += step) {
    for (SseEvent& e : chunked.Feed(stream.substr(pos, step))) got.push_back(std::move(e));
  }
  FUZZ_CHECK(got == expected);
  FUZZ_CHECK(whole.HasPartialEvent() == chunked.HasPartialEvent());

  // A blank line after the stream dispatches what was pending; nothing is left partial after it.
  std::vector<SseEvent> tail = chunked.Feed("\n\n");
  FUZZ_CHECK(!chunked.HasPartialEvent());
  for (const SseEvent& e : tail) FUZZ_CHECK(e.data.find('\r') == std::string_view::npos);
  return 0;
}
