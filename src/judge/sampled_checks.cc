// sampled_checks.cc — the comparison of the sampled checks' fingerprints (sampled_checks.h).
#include "judge/sampled_checks.h"

#include <cmath>
#include <cstdio>

namespace cuda_agent {
namespace {

std::string Label(size_t k, size_t count) {
  return "sampled check " + std::to_string(k + 1) + "/" + std::to_string(count);
}

// ChunkMismatch: the first chunk of one output tensor that differs, described; nullopt if none.
std::optional<std::string> ChunkMismatch(const Json& e, const Json& a) {
  if (e.value("dtype", "") != a.value("dtype", "") ||
      e.value("shape", Json()) != a.value("shape", Json())) {
    return e.value("path", "output") + " is " + a.value("dtype", "?") +
           a.value("shape", Json()).dump() + ", expected " + e.value("dtype", "?") +
           e.value("shape", Json()).dump();
  }
  const Json& ev = e.value("value", Json::array());
  const Json& eb = e.value("bound", Json::array());
  const Json& ef = e.value("finite", Json::array());
  const Json& av = a.value("value", Json::array());
  const Json& af = a.value("finite", Json::array());
  if (av.size() != ev.size() || af.size() != ev.size() || eb.size() != ev.size() ||
      ef.size() != ev.size()) {
    return e.value("path", "output") + ": its fingerprint has " + std::to_string(av.size()) +
           " chunks, expected " + std::to_string(ev.size());
  }
  for (size_t c = 0; c < ev.size(); ++c) {
    if (!ef[c].is_boolean() || !ef[c].get<bool>()) continue;  // left to the full checks
    const bool finite = af[c].is_boolean() && af[c].get<bool>();
    const double want = ev[c].is_number() ? ev[c].get<double>() : NAN;
    const double got = av[c].is_number() ? av[c].get<double>() : NAN;
    const double bound = eb[c].is_number() ? eb[c].get<double>() : 0.0;
    char buf[320];
    if (!finite) {
      std::snprintf(buf, sizeof(buf),
                    "%s: chunk %zu of %zu differs from the reference: it holds NaN or Inf where "
                    "the reference's "
                    "values are finite",
                    e.value("path", "output").c_str(), c + 1, ev.size());
      return std::string(buf);
    }
    const double diff = std::fabs(got - want);
    if (!(diff <= bound)) {  // a NaN difference fails too
      std::snprintf(buf, sizeof(buf),
                    "%s: chunk %zu of %zu differs from the reference (weighted sum %.6g, expected "
                    "%.6g, allowed difference %.3g)",
                    e.value("path", "output").c_str(), c + 1, ev.size(), got, want, bound);
      return std::string(buf);
    }
  }
  return std::nullopt;
}

// OutputMismatch: how one output's fingerprint `a` differs from the reference's `e`; nullopt if
// it does not.
std::optional<std::string> OutputMismatch(const Json& e, const Json& a) {
  if (!a.is_object() || e.value("signature", "") != a.value("signature", "")) {
    return "the output is " + (a.is_object() ? a.value("signature", "?") : std::string("missing")) +
           ", expected " + e.value("signature", "?");
  }
  const Json& et = e.value("tensors", Json::array());
  const Json& at = a.value("tensors", Json::array());
  if (et.size() != at.size()) {
    return std::to_string(at.size()) + " output tensors, expected " + std::to_string(et.size());
  }
  for (size_t t = 0; t < et.size(); ++t) {
    if (std::optional<std::string> why = ChunkMismatch(et[t], at[t])) {
      return *why +
             " (a kernel wrong on some inputs: a race, an uninitialised read, work skipped for "
             "some values)";
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> FirstSampledMismatch(const Json& expected, const Json& actual) {
  const Json& want = expected.value("fingerprints", Json::array());
  const Json& got =
      actual.is_object() ? actual.value("fingerprints", Json::array()) : Json::array();
  if (got.size() != want.size()) {
    return "the candidate ran " + std::to_string(got.size()) + " sampled checks, expected " +
           std::to_string(want.size());
  }
  for (size_t k = 0; k < want.size(); ++k) {
    if (std::optional<std::string> why = OutputMismatch(want[k], got[k]))
      return Label(k, want.size()) + ": " + *why;
  }
  return std::nullopt;
}

std::optional<std::string> FirstTimedMismatch(const Json& expected, const Json& actual, int warmup,
                                              int iters) {
  const Json& want = expected.value("fingerprints", Json::array());
  const int64_t sets = expected.value("input_sets", int64_t{0});
  if (want.empty() || sets <= 0) return std::nullopt;
  const Json& got = actual.is_array() ? actual : Json::array();
  size_t next = 0;  // the candidate's entries, in the order of its calls
  for (int n = 0; n < warmup + iters; ++n) {
    const size_t set = static_cast<size_t>(n % sets);
    if (set >= want.size()) continue;  // a set the reference did not fingerprint
    const std::string call = n < warmup ? "warm-up call " + std::to_string(n)
                                        : "timed call " + std::to_string(n - warmup);
    const std::string label = call + " (input set " + std::to_string(set) + ")";
    if (next >= got.size() || !got[next].is_object() || got[next].value("call", "") != call ||
        got[next].value("input_set", int64_t{-1}) != static_cast<int64_t>(set)) {
      return label + ": the candidate's process wrote no fingerprint of its output";
    }
    if (std::optional<std::string> why = OutputMismatch(want[set], got[next])) {
      return label + ": " + *why;
    }
    ++next;
  }
  if (next != got.size()) {
    return "the candidate's process wrote " + std::to_string(got.size()) +
           " fingerprints of timed calls, expected " + std::to_string(next);
  }
  return std::nullopt;
}

}  // namespace cuda_agent
