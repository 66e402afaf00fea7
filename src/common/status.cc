// status.cc — names and text for Status.
#include "common/status.h"

#include <cstdio>
#include <cstdlib>

namespace cuda_agent {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case StatusCode::kDeadlineExceeded:
      return "deadline_exceeded";
    case StatusCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

void DieOnErrorResultValue(const Status& status) {
  std::fprintf(stderr, "cuda-agent: Result::value() called on an error Result (%s)\n",
               status.ToString().c_str());
  std::abort();
}

}  // namespace cuda_agent
