// sampled_checks.h — the judge's side of the sampled checks (HACKS B14, flaky kernels): the
// candidate's fingerprints of its outputs on many input sets (its timed calls', then fresh sampled
// ones) against the reference's, each chunk's weighted sum within the bound the elementwise
// tolerance implies
// (python/cuda_agent_harness/sampled_checks.py makes both sides; docs/harness-protocol.md).
//
//   std::optional<std::string> why = FirstSampledMismatch(reference_section, candidate_file_json);
//   if (why) fail("verification failed: " + *why);
//   why = FirstTimedMismatch(reference_section["timed"], profile_result["timed_fingerprints"],
//                            warmup, iters);
#pragma once

#include <optional>
#include <string>

#include "common/json.h"

namespace cuda_agent {

// The candidate's fingerprints file in its output folder.
inline constexpr const char* kSampledChecksFile = "sampled.json";

// FirstSampledMismatch compares the candidate's fingerprints ({"count", "fingerprints": [...]})
// with the reference's ({"count", "fingerprints": [...]} with a bound per chunk) and describes the
// first sampled check whose output differs: another structure, shape or dtype, a chunk that is not
// finite where the reference's is, or a chunk sum beyond its bound. nullopt: all agree. Chunks
// whose expected values are not all finite are left to the full checks.
std::optional<std::string> FirstSampledMismatch(const Json& expected, const Json& actual);

// FirstTimedMismatch compares the fingerprints of the candidate's warm-up and timed calls (its
// profile's `timed_fingerprints`: [{"call", "input_set", "signature", "tensors"}], in call order)
// with the reference's of the profile's input sets (`timed` of its section: {"input_sets",
// "fingerprints"}): call n (warm-ups first) ran on set n mod input_sets, and every call on a set
// the reference fingerprinted must have its fingerprint, within the bounds. nullopt: all agree (or
// the reference fingerprinted none).
std::optional<std::string> FirstTimedMismatch(const Json& expected, const Json& actual, int warmup,
                                              int iters);

}  // namespace cuda_agent
