// status.h — Status and Result<T>: expected failures as values, never exceptions across modules.
//
//   Result<Task> task = LoadTask(path);
//   if (!task.ok()) return task.status();
//   Use(task.value());
//
// Both types are [[nodiscard]]: a call whose Status is dropped is a warning; where ignoring a
// failure is really intended, say so with (void). value() on an error Result is a programmer error:
// builds without NDEBUG (Debug) abort with the status's message instead of reading an empty
// optional.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace cuda_agent {

// StatusCode is the small fixed set of failure kinds used across the project.
enum class StatusCode {
  kOk,
  kInvalidArgument,     // the caller's input is malformed (a flag, a file's content)
  kNotFound,            // a file, task or key does not exist
  kFailedPrecondition,  // the environment is not ready (no torch, no nvcc, no GPU)
  kDeadlineExceeded,    // a watchdog fired
  kInternal,            // a bug or an unexpected failure of our own machinery
};

// StatusCodeName returns a stable lower-case name ("invalid_argument", ...).
const char* StatusCodeName(StatusCode code);

// Status is a code plus a one-line message a person can act on.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status DeadlineExceeded(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// DieOnErrorResultValue reports `status` and aborts: value() was called on a Result without a value
// (builds without NDEBUG only).
[[noreturn]] void DieOnErrorResultValue(const Status& status);

// Result holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // value() may only be called when ok(); a programmer error otherwise (an abort in Debug builds).
  T& value() & {
    CheckHasValue();
    return *value_;
  }
  const T& value() const& {
    CheckHasValue();
    return *value_;
  }
  T&& value() && {
    CheckHasValue();
    return std::move(*value_);
  }
  T* operator->() {
    CheckHasValue();
    return &*value_;
  }
  const T* operator->() const {
    CheckHasValue();
    return &*value_;
  }

 private:
  void CheckHasValue() const {
#ifndef NDEBUG
    if (!value_.has_value()) DieOnErrorResultValue(status_);
#endif
  }

  Status status_;
  std::optional<T> value_;
};

}  // namespace cuda_agent
