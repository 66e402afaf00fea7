// diagnostics.cc — regular expressions for the compilers' error formats.
#include "builder/diagnostics.h"

#include <regex>
#include <set>
#include <sstream>

namespace cuda_agent {

std::string Diagnostic::ToString() const {
  std::ostringstream s;
  if (!file.empty()) {
    s << file;
    if (line > 0) s << ":" << line;
    if (column > 0) s << ":" << column;
    s << ": ";
  }
  s << "error: " << message;
  return s.str();
}

std::string StripPrefixEverywhere(std::string text, const std::string& prefix) {
  if (prefix.empty()) return text;
  size_t pos = 0;
  while ((pos = text.find(prefix, pos)) != std::string::npos) text.erase(pos, prefix.size());
  return text;
}

std::vector<Diagnostic> ParseCompilerErrors(const std::string& output,
                                            const std::string& strip_prefix, size_t max_errors) {
  // g++/clang:  file:line:col: error: message   (also "fatal error")
  static const std::regex gcc_re(R"(^(.+?):(\d+):(?:(\d+):)?\s*(?:fatal )?error:\s*(.*)$)");
  // nvcc front end:  file(line): error: message
  static const std::regex nvcc_re(R"(^(.+?)\((\d+)\):\s*(?:catastrophic )?error:?\s*(.*)$)");
  // ptxas, nvlink and ld errors carry no useful location.
  static const std::regex tool_re(
      R"(^(?:ptxas|nvlink|ld|/usr/bin/ld|collect2)[^:]*:?\s*(?:fatal )?error\s*:?\s*(.*)$)");
  static const std::regex undefined_re(R"((undefined reference to .*|undefined symbol: .*)$)");

  std::vector<Diagnostic> errors;
  std::set<std::string> seen;
  std::istringstream lines(StripPrefixEverywhere(output, strip_prefix));
  std::string line;
  while (std::getline(lines, line) && errors.size() < max_errors) {
    std::smatch m;
    Diagnostic d;
    if (std::regex_match(line, m, gcc_re)) {
      d.file = m[1];
      d.line = std::stoi(m[2]);
      d.column = m[3].matched ? std::stoi(m[3]) : 0;
      d.message = m[4];
    } else if (std::regex_match(line, m, nvcc_re)) {
      d.file = m[1];
      d.line = std::stoi(m[2]);
      d.message = m[3];
    } else if (std::regex_match(line, m, tool_re)) {
      d.message = m[1];
    } else if (std::regex_search(line, m, undefined_re)) {
      d.message = m[1];
    } else {
      continue;
    }
    if (seen.insert(d.ToString()).second) errors.push_back(std::move(d));
  }
  return errors;
}

}  // namespace cuda_agent
