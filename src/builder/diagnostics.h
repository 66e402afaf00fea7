// diagnostics.h — turns g++/nvcc/ld/ptxas output into short "file:line: message" errors that an
// agent can act on, with the build folder's paths replaced by the candidate's own.
#pragma once

#include <string>
#include <vector>

namespace cuda_agent {

struct Diagnostic {
  std::string file;  // relative to the candidate ("kernels/relu.cu"); empty for link errors
  int line = 0;
  int column = 0;
  std::string message;

  std::string ToString() const;  // "kernels/relu.cu:12:5: error: ..."
};

// ParseCompilerErrors extracts error diagnostics (not warnings) in order, at most `max_errors`,
// stripping `strip_prefix` from file paths.
std::vector<Diagnostic> ParseCompilerErrors(const std::string& output,
                                            const std::string& strip_prefix, size_t max_errors);

// StripPrefixEverywhere replaces every occurrence of `prefix` in `text` by nothing.
std::string StripPrefixEverywhere(std::string text, const std::string& prefix);

}  // namespace cuda_agent
