// sse.h — an incremental parser of Server-Sent Events (the WHATWG event-stream format), the way
// both LLM providers stream their answers. Bytes go in as they arrive, in any chunking; complete
// events come out. Handles `event:`, `data:` (several lines join with "\n"), `id:`, comments
// (lines starting with ':'), LF, CRLF and CR line ends, and a leading UTF-8 byte-order mark.
//
//   SseParser parser;
//   for (const SseEvent& e : parser.Feed(chunk)) Handle(e.event, e.data);
//   if (parser.HasPartialEvent()) ...  // the stream ended in the middle of an event
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cuda_agent {

// SseEvent is one dispatched event; `event` is empty when the stream named no type.
struct SseEvent {
  std::string event;
  std::string data;
  std::string id;

  bool operator==(const SseEvent&) const = default;
};

// SseParser keeps the unfinished line and event between calls to Feed.
class SseParser {
 public:
  // Feed consumes the next bytes and returns the events they complete.
  std::vector<SseEvent> Feed(std::string_view bytes);
  // HasPartialEvent is true when fields (or an unfinished line) wait for the blank line that would
  // dispatch them; at the end of a stream they are dropped, as the format says.
  bool HasPartialEvent() const;

 private:
  void ProcessLine(std::string_view line, std::vector<SseEvent>* out);

  std::string line_;             // bytes of the line not yet ended
  bool last_was_cr_ = false;     // the previous chunk ended with CR: a leading LF belongs to it
  bool at_stream_start_ = true;  // a BOM may only come first
  std::string event_;
  std::string data_;
  std::string id_;
  bool has_fields_ = false;
};

}  // namespace cuda_agent
