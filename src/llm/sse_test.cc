// sse_test.cc — the SSE parser gives the same events whatever the chunking of its input.
#include "llm/sse.h"

#include <gtest/gtest.h>

#include <random>

namespace cuda_agent {
namespace {

// A stream with every feature: types, multi-line data, comments, CRLF and CR line ends, an id,
// an empty data line, a field without a colon, a typed event without data, retry.
const char kStream[] =
    "\xEF\xBB\xBF: keep-alive comment\n"
    "event: message_start\n"
    "data: {\"type\":\"message_start\"}\n"
    "\n"
    "data: line one\r\n"
    "data: line two\r\n"
    "data:no-space\r\n"
    "\r\n"
    "id: 42\r"
    "event: ping\r"
    "data\r"
    "\r"
    ":another comment\n"
    "retry: 1000\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"h\\u00e9llo \xE2\x9C\x93\"}}]}\n\n"
    "event: bare\n\n"
    "\n\n"
    "data: [DONE]\n\n";

std::vector<SseEvent> Expected() {
  return {
      {"message_start", "{\"type\":\"message_start\"}", ""},
      {"", "line one\nline two\nno-space", ""},
      {"ping", "", "42"},
      {"", "{\"choices\":[{\"delta\":{\"content\":\"h\\u00e9llo \xE2\x9C\x93\"}}]}", "42"},
      {"bare", "", "42"},
      {"", "[DONE]", "42"},
  };
}

std::vector<SseEvent> ParseInChunks(const std::string& stream, const std::vector<size_t>& cuts) {
  SseParser parser;
  std::vector<SseEvent> events;
  size_t begin = 0;
  for (size_t cut : cuts) {
    for (SseEvent& e : parser.Feed(std::string_view(stream).substr(begin, cut - begin)))
      events.push_back(e);
    begin = cut;
  }
  for (SseEvent& e : parser.Feed(std::string_view(stream).substr(begin))) events.push_back(e);
  EXPECT_FALSE(parser.HasPartialEvent());
  return events;
}

TEST(SseParserTest, WholeStream) { EXPECT_EQ(ParseInChunks(kStream, {}), Expected()); }

TEST(SseParserTest, EverySingleSplitPoint) {
  std::string stream = kStream;
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    EXPECT_EQ(ParseInChunks(stream, {cut}), Expected()) << "split at byte " << cut;
  }
}

TEST(SseParserTest, OneByteAtATime) {
  std::string stream = kStream;
  std::vector<size_t> cuts;
  for (size_t i = 1; i < stream.size(); ++i) cuts.push_back(i);
  EXPECT_EQ(ParseInChunks(stream, cuts), Expected());
}

TEST(SseParserTest, RandomChunkings) {
  std::string stream = kStream;
  std::mt19937 rng(1234);
  for (int round = 0; round < 500; ++round) {
    std::vector<size_t> cuts;
    size_t at = 0;
    while (true) {
      at += std::uniform_int_distribution<size_t>(1, 9)(rng);
      if (at >= stream.size()) break;
      cuts.push_back(at);
    }
    EXPECT_EQ(ParseInChunks(stream, cuts), Expected()) << "round " << round;
  }
}

TEST(SseParserTest, StreamCutInsideAnEventLeavesAPartialEvent) {
  SseParser parser;
  EXPECT_TRUE(parser.Feed("data: {\"a\":1}\n\ndata: {\"b\"").size() == 1);
  EXPECT_TRUE(parser.HasPartialEvent());
  SseParser second;
  EXPECT_TRUE(second.Feed("event: x\ndata: y\n").empty());
  EXPECT_TRUE(second.HasPartialEvent());
}

TEST(SseParserTest, CommentsAloneDispatchNothing) {
  SseParser parser;
  EXPECT_TRUE(parser.Feed(": ping\n\n: ping\r\n\r\n").empty());
  EXPECT_FALSE(parser.HasPartialEvent());
}

}  // namespace
}  // namespace cuda_agent
