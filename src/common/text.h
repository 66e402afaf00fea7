// text.h — small helpers on text that several components parse (tool output, CSV, headers).
#pragma once

#include <string_view>

namespace cuda_agent {

// TrimSpace drops spaces, tabs and carriage returns from both ends.
inline std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace cuda_agent
