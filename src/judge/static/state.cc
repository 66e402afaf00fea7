// state.cc — static_state and global_state: state that outlives the call (caches keyed by pointer
// or content, call counters that tell warm-up from timing; HACKS B4, A5). static/thread_local
// variables and namespace-scope (__device__ included) variables must be immutable. Where the state
// is a legitimate idiom done the wrong way (a cached cuBLAS handle, stream, device properties or
// scratch tensor), the message names the allowed way (AllowedWay).
#include <algorithm>

#include "judge/static/source_scan.h"

namespace cuda_agent {
namespace {

// ConstDeclaration: the declaration tokens T[begin, end) make an immutable object (constexpr,
// __constant__, __shared__, or const without a mutable pointer after the last const).
bool ConstDeclaration(const std::vector<Token>& T, size_t begin, size_t end) {
  size_t last_const = end;
  for (size_t k = begin; k < end; ++k) {
    if (T[k].IsIdent("constexpr") || T[k].IsIdent("__constant__") || T[k].IsIdent("__shared__") ||
        T[k].IsIdent("consteval")) {
      return true;
    }
    if (T[k].IsIdent("const")) last_const = k;
  }
  if (last_const == end) return false;
  for (size_t k = last_const + 1; k < end; ++k) {
    if (T[k].IsPunct("*")) return false;
  }
  return true;
}

// LooksLikeParameters: the contents of T[open]'s parentheses declare parameters (a function
// declaration) rather than pass constructor arguments.
bool LooksLikeParameters(const std::vector<Token>& T, size_t open, size_t close) {
  if (close == open + 1) return true;
  static const auto* types = new std::unordered_set<std::string>(WordSet(
      "void int float double char bool unsigned signed long short auto const size_t int64_t "
      "int32_t uint32_t uint64_t"));
  for (size_t k = open + 1; k < close; ++k) {
    if (T[k].IsIdent() && types->count(T[k].text)) return true;
    if (k + 1 < close && T[k].IsIdent() && T[k + 1].IsIdent()) return true;
    if (k + 2 < close && T[k].IsIdent() &&
        (T[k + 1].IsPunct("&") || T[k + 1].IsPunct("*") || T[k + 1].IsPunct("&&")) &&
        T[k + 2].IsIdent()) {
      return true;
    }
    if (k + 1 < close && T[k].IsPunct(">") && T[k + 1].IsIdent()) return true;
  }
  return false;
}

// The idioms people cache across calls that have an allowed way, by a type name in the
// declaration; the first match in this order wins (`static std::map<int, cudaStream_t>` is a
// stream cache).
struct CachedIdiom {
  const char* types;
  const char* allowed;
};

const std::vector<CachedIdiom>& CachedIdioms() {
  static const auto* idioms = new std::vector<CachedIdiom>{
      {"cublasHandle_t",
       "for a cuBLAS handle, take torch's in every call: at::cuda::getCurrentCUDABlasHandle() "
       "(created once per device and thread by torch, already bound to the current stream)"},
      {"cublasLtHandle_t",
       "cuBLASLt is not allowed; for a GEMM take torch's cuBLAS handle in every call: "
       "at::cuda::getCurrentCUDABlasHandle()"},
      {"cudaStream_t CUstream CUDAStream",
       "for a stream, take at::cuda::getCurrentCUDAStream() in every call (a stream of your own "
       "must wait on it and be joined back before the call returns)"},
      {"cudaDeviceProp",
       "for device properties (SM count, shared memory), use "
       "at::cuda::getCurrentDeviceProperties(): torch caches them"},
      {"cudnnHandle_t",
       "for a cuDNN handle, create it in the call (cudnnCreate, then cudnnSetStream with "
       "at::cuda::getCurrentCUDAStream()) and destroy it before returning"},
      {"cudaEvent_t CUevent",
       "for an event, create it in the call (cudaEventCreateWithFlags(&e, "
       "cudaEventDisableTiming)) and destroy it before returning"},
      {"thread jthread pthread_t",
       "threads are not allowed: do the work inside the call, on "
       "at::cuda::getCurrentCUDAStream()"},
      {"Tensor TensorBase",
       "for scratch memory, allocate a tensor in every call with torch::empty(..., x.options()) "
       "(torch's caching allocator makes that cheap); outputs must be computed anew every call"},
  };
  return *idioms;
}

// AllowedWay is the allowed way for the idiom the declaration T[begin, end) caches, or "".
std::string AllowedWay(const std::vector<Token>& T, size_t begin, size_t end) {
  for (const CachedIdiom& idiom : CachedIdioms()) {
    std::unordered_set<std::string> types = WordSet(idiom.types);
    for (size_t k = begin; k < end && k < T.size(); ++k) {
      if (T[k].IsIdent() && types.count(T[k].text)) return idiom.allowed;
    }
  }
  return "";
}

// StateAdvice ends a static_state/global_state message: the allowed way for a known idiom, else
// the general one.
std::string StateAdvice(const std::vector<Token>& T, size_t begin, size_t end,
                        const std::string& general) {
  std::string allowed = AllowedWay(T, begin, end);
  return allowed.empty() ? general : allowed;
}

enum class Scope { kNamespace, kBlock };

bool OpensNamespace(const std::vector<Token>& T, size_t begin, size_t brace) {
  for (size_t k = begin; k < brace; ++k) {
    if (T[k].IsIdent("namespace")) return true;
  }
  // extern "C" {
  return brace >= begin + 2 && T[brace - 2].IsIdent("extern") &&
         T[brace - 1].kind == TokenKind::kString;
}

// IsVariableWithBraces: `int a[] = {..}` or `int x{0}` (not a function, class or enum body).
bool IsVariableWithBraces(const std::vector<Token>& T, size_t begin, size_t brace) {
  for (size_t k = begin; k < brace; ++k) {
    if (T[k].IsIdent("class") || T[k].IsIdent("struct") || T[k].IsIdent("union") ||
        T[k].IsIdent("enum") || T[k].IsPunct("(")) {
      bool assigned_first = false;
      for (size_t m = begin; m < k; ++m) assigned_first = assigned_first || T[m].IsPunct("=");
      if (!assigned_first) return false;
    }
  }
  for (size_t k = begin; k < brace; ++k) {
    if (T[k].IsPunct("=")) return true;
  }
  return brace > begin && T[brace - 1].IsIdent() && brace - begin >= 2;
}

void CheckNamespaceVariable(SourceScan& s, const std::vector<Token>& T, size_t begin, size_t end) {
  size_t stop = end;
  for (size_t k = begin; k < end; ++k) {
    if (T[k].IsPunct("=") || T[k].IsPunct("[") || T[k].IsPunct("{")) {
      stop = k;
      break;
    }
  }
  if (stop + 1 < end && T[stop].IsPunct("=") && T[stop + 1].IsPunct("[")) return;  // a lambda
  if (ConstDeclaration(T, begin, stop)) return;
  std::string name;
  bool device = false;
  for (size_t k = begin; k < stop; ++k) {
    if (T[k].IsIdent()) name = T[k].text;
    device = device || T[k].IsIdent("__device__") || T[k].IsIdent("__managed__");
  }
  if (name.empty()) return;
  s.Emit(kGlobalState, T[begin].line,
         std::string(device ? "__device__ " : "") + "global `" + name +
             "` is mutable state that outlives the call (a cache or a counter); " +
             StateAdvice(T, begin, stop,
                         "allocate scratch per call (torch::empty + cudaMemsetAsync), or make "
                         "it const/constexpr"));
}

void CheckNamespaceStatement(SourceScan& s, const std::vector<Token>& T, size_t begin, size_t end) {
  size_t b = begin;
  if (b < end && T[b].IsIdent("template") && b + 1 < end && T[b + 1].IsPunct("<")) {
    b = SkipAngles(T, b + 1);
  }
  if (b >= end) return;
  static const auto* skip = new std::unordered_set<std::string>(
      WordSet("using typedef namespace static_assert friend class struct union enum template"));
  if (T[b].IsIdent() && skip->count(T[b].text)) return;
  size_t first_paren = end;
  size_t first_assign = end;
  for (size_t k = b; k < end; ++k) {
    if (T[k].IsIdent("static") || T[k].IsIdent("thread_local")) return;  // static_state's
    if (T[k].IsPunct("(") && first_paren == end) first_paren = k;
    if (T[k].IsPunct("=") && first_assign == end) first_assign = k;
  }
  if (first_paren < first_assign) {
    bool declarator_group = first_paren + 1 < end &&
                            (T[first_paren + 1].IsPunct("*") || T[first_paren + 1].IsPunct("&"));
    if (!declarator_group) return;  // a function declaration or a macro invocation
  }
  if (end - b < 2) return;
  CheckNamespaceVariable(s, T, b, end);
}

}  // namespace

// CheckStatic: static and thread_local variables that are not immutable.
void CheckStatic(SourceScan& s, const std::vector<Token>& T) {
  static const auto* function_tail = new std::unordered_set<std::string>(
      WordSet("{ const noexcept -> override final throw __attribute__ try"));
  for (size_t i = 0; i < T.size(); ++i) {
    if (!T[i].IsIdent("static") && !T[i].IsIdent("thread_local")) continue;
    size_t j = i + 1;
    int angle = 0;
    for (; j < T.size() && j < i + kLookahead; ++j) {
      const Token& t = T[j];
      if (t.IsPunct("<")) ++angle;
      if (t.IsPunct(">") && angle > 0) --angle;
      if (t.IsPunct(">>") && angle > 0) angle = std::max(0, angle - 2);
      if (angle > 0) continue;
      if (t.IsPunct("(") || t.IsPunct("=") || t.IsPunct(";") || t.IsPunct("{") || t.IsPunct("[") ||
          t.IsPunct(",")) {
        break;
      }
    }
    if (j >= T.size() || j >= i + kLookahead) continue;
    bool kernel = false;
    for (size_t k = i + 1; k < j; ++k) kernel = kernel || T[k].IsIdent("__global__");
    if (kernel) continue;
    if (T[j].IsPunct("(")) {
      size_t close = MatchClose(T, j);
      bool declarator_group = j + 1 < T.size() && (T[j + 1].IsPunct("*") || T[j + 1].IsPunct("&") ||
                                                   T[j + 1].IsPunct("^"));
      if (!declarator_group) {
        if (close + 1 >= T.size()) continue;
        const Token& after = T[close + 1];
        if (function_tail->count(after.text)) continue;
        bool ends = after.IsPunct(";") || after.IsPunct(",") || after.IsPunct("=");
        if (!ends || LooksLikeParameters(T, j, close)) continue;
      }
    }
    // A variable. Registration objects of REGISTER_BINDING written out are fine.
    bool registrar = false;
    std::string name;
    for (size_t k = i + 1; k < j; ++k) {
      registrar = registrar || T[k].IsIdent("BindingRegistrar");
      if (T[k].IsIdent() && !T[k].IsIdent("const")) name = T[k].text;
    }
    if (registrar || ConstDeclaration(T, i + 1, j)) continue;
    if (T[j].IsPunct("(") && j + 2 < T.size() && T[j + 2].IsIdent()) name = T[j + 2].text;
    s.Emit(kStaticState, T[i].line,
           T[i].text + " variable `" + name +
               "` keeps state across calls (a cache or a call counter); " +
               StateAdvice(T, i + 1, j, "allocate per call, or make it const/constexpr"));
  }
}

// CheckGlobals: mutable variables at namespace scope, including __device__ globals.
void CheckGlobals(SourceScan& s) {
  const std::vector<Token>& T = s.code;
  std::vector<Scope> scopes = {Scope::kNamespace};
  size_t begin = 0;
  bool done = false;  // the current statement was already judged (an initialiser in braces)
  int parens = 0;
  for (size_t i = 0; i < T.size(); ++i) {
    const Token& t = T[i];
    bool at_namespace = scopes.back() == Scope::kNamespace;
    if (t.IsPunct("(")) ++parens;
    if (t.IsPunct(")")) parens = std::max(0, parens - 1);
    if (t.IsPunct("{")) {
      Scope kind = Scope::kBlock;
      if (at_namespace && parens == 0) {
        // A template's parameter list (`template <int ITEMS = 8> __global__ void k(...) {`) holds
        // defaults, not a variable's initialiser.
        size_t decl = begin;
        if (decl + 1 < i && T[decl].IsIdent("template") && T[decl + 1].IsPunct("<")) {
          decl = SkipAngles(T, decl + 1);
        }
        if (OpensNamespace(T, begin, i)) {
          kind = Scope::kNamespace;
        } else if (!done && decl < i && IsVariableWithBraces(T, decl, i)) {
          CheckNamespaceVariable(s, T, decl, i);
          done = true;
        }
      }
      scopes.push_back(kind);
      if (kind == Scope::kNamespace) begin = i + 1;
      continue;
    }
    if (t.IsPunct("}")) {
      if (scopes.size() > 1) scopes.pop_back();
      if (scopes.back() == Scope::kNamespace && !done) begin = i + 1;
      continue;
    }
    if (t.IsPunct(";") && at_namespace && parens == 0) {
      if (!done) CheckNamespaceStatement(s, T, begin, i);
      begin = i + 1;
      done = false;
    }
  }
}

}  // namespace cuda_agent
