// source_scan.h — one file's scan: the lexed source, the state the rule families share (the tokens
// outside directives, which tokens are tensors, the functions the file defines) and the violations
// found. Each rule family is a function of a SourceScan, in a file of its own:
//
//   includes.cc     forbidden_include
//   names.cc        the identifier rules: side_stream, host_thread, host_roundtrip, l2_persistence,
//                   device_state, dynamic_loading, timer_patching, clock_read, process_escape,
//                   file_io, python_api, and torch_compute for qualified names
//   libraries.cc    library_compute (cuBLAS for GEMM, cuDNN for convolution); the libraries used
//   torch_names.cc  the torch/ATen name lists; torch_namespace_alias
//   tensors.cc      tensor_compute, and torch_compute by argument-dependent lookup
//   state.cc        static_state, global_state
//   escapes.cc      hidden_identifier, asm_escape, linker_tricks, symbol_interposition
//
//   SourceScan scan(text, "kernels/x.cu", has_file);
//   std::vector<StaticViolation> found = scan.Run();
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "builder/cuda_libraries.h"
#include "judge/cpp_lexer.h"
#include "judge/static/rules.h"
#include "judge/static/tokens.h"

namespace cuda_agent {

// Larger files are not scanned (and not accepted): no kernel source is this big.
inline constexpr uintmax_t kMaxSourceBytes = 1 << 20;

// Past this many violations a file's report says nothing new.
inline constexpr size_t kMaxViolationsPerFile = 100;

// HasFile says whether the candidate holds a file (a path relative to the candidate, such as
// kernels/common.cuh); quoted includes resolve through it.
using HasFile = std::function<bool(const fs::path& relative)>;

struct SourceScan {
  // `has_file` null: every path inside kernels/ counts as the candidate's.
  SourceScan(std::string_view text, std::string rel_path, HasFile has_file);

  // Run applies every family and returns the violations sorted by line (and sets `libraries`).
  std::vector<StaticViolation> Run();
  // Emit records a violation of `rule` at `line`, once per rule and line, at most
  // kMaxViolationsPerFile per file.
  void Emit(Rule rule, int line, std::string message);

  LexedSource src;
  std::string rel;  // the file, relative to the candidate
  HasFile has_file;
  std::vector<Token> code;  // tokens outside preprocessor directives
  std::vector<bool> tensor_use;
  std::vector<bool> declaration;
  std::unordered_set<std::string> defined;  // functions the file defines (with a body)
  bool using_std = false;
  // torch_compute_allowed: the policy lets torch compute (PolicyRules::torch_compute): Emit drops
  // torch_compute, tensor_compute and torch_namespace_alias, and backend_switch runs (policy.cc).
  bool torch_compute_allowed = false;
  std::set<std::pair<int, int>> emitted;  // (rule, line)
  std::vector<StaticViolation> found;
  CudaLibraries libraries;  // set by Run: LibrariesUsed(src)
};

// --- includes.cc --------------------------------------------------------------------------------
void CheckIncludes(SourceScan& s);

// --- names.cc -----------------------------------------------------------------------------------
// CheckNames applies the identifier, prefix, library and namespace rules to every name of T.
void CheckNames(SourceScan& s, const std::vector<Token>& T);

// --- libraries.cc -------------------------------------------------------------------------------
// LibraryVerdict says why a cuBLAS/cuDNN identifier is not allowed, or "" when it is.
std::string LibraryVerdict(const std::string& name);
// LibrariesUsed: the CUDA libraries a source uses: a header of one is included (cublas_v2.h,
// cudnn.h ...) or an identifier starts with one's prefix (cublasSgemm, cudnnCreate ...).
// Comments and string literals are blanked by the lexer, so a word there never counts.
CudaLibraries LibrariesUsed(const LexedSource& src);

// --- torch_names.cc -----------------------------------------------------------------------------
const std::unordered_set<std::string>& AtenComputeMethods();
const std::unordered_set<std::string>& CommonMethodNames();
const std::unordered_set<std::string>& TensorMetadataMethods();
const std::unordered_set<std::string>& TensorViewMethods();
const std::unordered_set<std::string>& AtenExtraFunctions();
// IsTensorCreationFunction: empty*, zeros*, ones*, full* (after torch:: or at::).
bool IsTensorCreationFunction(const std::string& name);
// TorchNameAllowed says whether a qualified name rooted at torch/at/c10 (parts[0]) is allowed.
bool TorchNameAllowed(const std::vector<std::string>& parts);
void CheckNamespaceAliases(SourceScan& s);

// --- tensors.cc ---------------------------------------------------------------------------------
// TrackTensors marks every use of a variable declared as a Tensor in s.tensor_use.
void TrackTensors(SourceScan& s);
// CheckMethods: method calls that run ATen operators. `use` marks tensor variables (null for
// directive tokens, where only the ATen compute names on unknown receivers are checked).
void CheckMethods(SourceScan& s, const std::vector<Token>& T, const std::vector<bool>* use);
void CheckTensorOperators(SourceScan& s);
void CheckAdlCalls(SourceScan& s);
// SetDeviceReceiver: T[i] starts cudaSetDevice(R.device().index()) or cudaSetDevice(R.get_device())
// outside a directive; returns the index of R (checked to be a tensor by CheckSetDevice), or 0.
size_t SetDeviceReceiver(const std::vector<Token>& T, size_t i);
// CheckSetDevice: cudaSetDevice to the device of something that is not a tensor (names.cc lets
// the tensor's own device through, to be decided here).
void CheckSetDevice(SourceScan& s);

// --- state.cc -----------------------------------------------------------------------------------
// CheckStatic: static and thread_local variables that are not immutable.
void CheckStatic(SourceScan& s, const std::vector<Token>& T);
// CheckGlobals: mutable variables at namespace scope, including __device__ globals.
void CheckGlobals(SourceScan& s);

// --- policy.cc ----------------------------------------------------------------------------------
// CheckBackendSwitches: backend_switch, run only when torch_compute_allowed.
void CheckBackendSwitches(SourceScan& s);
// --- escapes.cc ---------------------------------------------------------------------------------
void CheckHiddenIdentifiers(SourceScan& s);
void CheckAsm(SourceScan& s);
void CheckAttributes(SourceScan& s);
void CheckPragmas(SourceScan& s);
// DefinedFunctions collects the names of functions defined (with a body) in a token list.
std::unordered_set<std::string> DefinedFunctions(const std::vector<Token>& T);
void CheckInterposition(SourceScan& s);

}  // namespace cuda_agent
