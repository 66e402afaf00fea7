// sse.cc — the Server-Sent Events parser.
#include "llm/sse.h"

namespace cuda_agent {

std::vector<SseEvent> SseParser::Feed(std::string_view bytes) {
  std::vector<SseEvent> events;
  for (char c : bytes) {
    if (last_was_cr_) {
      last_was_cr_ = false;
      if (c == '\n') continue;  // the LF of a CRLF split across chunks
    }
    if (c == '\r' || c == '\n') {
      last_was_cr_ = c == '\r';
      ProcessLine(line_, &events);
      line_.clear();
      continue;
    }
    line_ += c;
    if (at_stream_start_ && line_.size() == 3) {
      if (line_ == "\xEF\xBB\xBF") line_.clear();
      at_stream_start_ = false;
    }
  }
  return events;
}

bool SseParser::HasPartialEvent() const { return has_fields_ || !line_.empty(); }

void SseParser::ProcessLine(std::string_view line, std::vector<SseEvent>* out) {
  at_stream_start_ = false;
  if (line.empty()) {
    if (!data_.empty()) {
      data_.pop_back();  // the "\n" after the last data line
      out->push_back({event_, data_, id_});
    } else if (has_fields_ && !event_.empty()) {
      out->push_back({event_, "", id_});  // an event with a type and no data (lenient)
    }
    event_.clear();
    data_.clear();
    has_fields_ = false;
    return;
  }
  if (line[0] == ':') return;  // a comment (keep-alive)
  std::string_view field = line;
  std::string_view value;
  if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    data_.append(value);
    data_ += '\n';
    has_fields_ = true;
  } else if (field == "event") {
    event_ = std::string(value);
    has_fields_ = true;
  } else if (field == "id") {
    id_ = std::string(value);
  }
  // "retry" and unknown fields are ignored.
}

}  // namespace cuda_agent
