// text.h — small helpers on text that several components parse (tool output, CSV, headers) or
// write (HTML pages).
#pragma once

#include <string>
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

// HtmlEscape: `text` safe inside HTML (and SVG) text and quoted attribute values of either quote:
// & < > " ' become &amp; &lt; &gt; &quot; &#39;. The one escaper of every page the project writes
// (the status page, report.html).
inline std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace cuda_agent
