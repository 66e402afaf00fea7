// text.h — small helpers on text that several components parse (tool output, CSV, headers).
#pragma once

#include <string_view>
#include <vector>

namespace cuda_agent {

// TrimSpace drops spaces, tabs and carriage returns from both ends.
inline std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// SplitLines: the lines of `text`, without their '\n' (a last line without one included; no
// empty line after a final '\n').
inline std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    lines.push_back(text.substr(pos, eol - pos));
    pos = eol + 1;
  }
  return lines;
}

}  // namespace cuda_agent
