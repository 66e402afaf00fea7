// tensors.cc — tensor_compute: which variables are tensors (declared as Tensor, or auto from one,
// within their scope), and what may be done with them in C++ — metadata, views and data movement
// (contiguous(), cuda(), to(<CUDA device>), copy_()) only; other method calls, operators and
// indexing run ATen. Also torch_compute by argument-dependent lookup: relu(x) on a Tensor x calls
// at::relu.
#include <algorithm>
#include <unordered_map>

#include "judge/static/source_scan.h"

namespace cuda_agent {
namespace {

// TensorTypeEnd returns the index after a Tensor type starting at i (torch::Tensor,
// at::Tensor, ::at::Tensor or a bare Tensor), or 0 when there is none.
size_t TensorTypeEnd(const SourceScan& s, size_t i) {
  const std::vector<Token>& T = s.code;
  if (!T[i].IsIdent() || !StartsChain(T, i)) return 0;
  if (i > 0 && (T[i - 1].IsPunct(".") || T[i - 1].IsPunct("->"))) return 0;
  QualifiedName q = ChainAt(T, i);
  bool tensor = (q.parts.size() == 1 && q.parts[0] == "Tensor") ||
                (q.parts.size() == 2 && IsTorchRoot(q.parts[0]) && q.parts[1] == "Tensor");
  return tensor ? q.last + 1 : 0;
}

// ReturnsTensor: a method whose result is a tensor when its receiver is one.
bool ReturnsTensor(const std::string& m) {
  static const auto* creation = new std::unordered_set<std::string>(
      WordSet("new_empty new_empty_strided new_zeros new_ones new_full contiguous"));
  return TensorViewMethods().count(m) || AtenComputeMethods().count(m) ||
         CommonMethodNames().count(m) || creation->count(m);
}

// RhsIsTensor: does the expression s.code[begin, end) (the initialiser of an auto variable)
// yield a tensor? Only chains rooted at a tensor variable or a torch:: creation function
// (empty*, zeros*, ones*, full*) are followed.
template <typename IsLive>
bool RhsIsTensor(const SourceScan& s, size_t begin, size_t end, const IsLive& is_live) {
  const std::vector<Token>& T = s.code;
  size_t pos = begin;
  bool tensor = false;
  if (pos >= end) return false;
  if (T[pos].IsIdent() && is_live(T[pos].text)) {
    tensor = true;
    ++pos;
  } else if (StartsChain(T, pos)) {
    QualifiedName q = ChainAt(T, pos);
    const std::string& last = q.parts.back();
    if (q.parts.size() < 2 || !IsTorchRoot(q.parts.front())) return false;
    if (!IsTensorCreationFunction(last)) return false;
    pos = q.last + 1;
    if (pos >= end || !T[pos].IsPunct("(")) return false;
    pos = MatchClose(T, pos) + 1;
    tensor = true;
  } else {
    return false;
  }
  while (pos + 1 < end && tensor) {
    if (T[pos].IsPunct("[")) {
      pos = MatchClose(T, pos) + 1;
      continue;
    }
    if (!(T[pos].IsPunct(".") || T[pos].IsPunct("->"))) break;
    size_t name = pos + 1;
    if (T[name].IsIdent("template")) ++name;
    if (name >= end || !T[name].IsIdent()) break;
    const std::string& m = T[name].text;
    pos = name + 1;
    if (pos < end && T[pos].IsPunct("<")) pos = SkipAngles(T, pos);
    if (pos < end && T[pos].IsPunct("(")) pos = MatchClose(T, pos) + 1;
    tensor = ReturnsTensor(m);
  }
  return tensor;
}

struct LiveTensor {
  std::string name;
  int depth;
  bool param;
  bool entered = false;
};

// TrackTensors marks every use of a variable declared as a Tensor (parameters, locals, auto
// variables initialised from a tensor) in s.tensor_use, within its scope.

// ReceiverIsTensor: is the expression ending at s.code[k] (before a "." or "->") a tensor?
bool ReceiverIsTensor(const SourceScan& s, const std::vector<Token>& T,
                      const std::vector<bool>& use, size_t k, int budget = 16) {
  if (budget == 0 || k >= T.size()) return false;
  if (T[k].IsIdent()) return use[k] && !s.declaration[k];
  if (T[k].IsPunct("]")) {
    size_t open = MatchOpen(T, k);
    return open > 0 && open < T.size() && ReceiverIsTensor(s, T, use, open - 1, budget - 1);
  }
  if (!T[k].IsPunct(")")) return false;
  size_t open = MatchOpen(T, k);
  if (open == 0 || open >= T.size()) return false;
  size_t name = open - 1;
  if (T[name].IsPunct(">")) {
    int angle = 0;
    const size_t stop = name > kLookahead ? name - kLookahead : 0;
    while (name > stop) {
      if (T[name].IsPunct(">")) ++angle;
      if (T[name].IsPunct("<") && --angle == 0) break;
      --name;
    }
    if (name == stop) return false;
    --name;
  }
  if (!T[name].IsIdent() || name == 0) return false;
  const std::string& m = T[name].text;
  const Token& before = T[name - 1];
  if (before.IsPunct(".") || before.IsPunct("->") || (before.IsIdent("template") && name >= 2)) {
    size_t dot = before.IsIdent("template") ? name - 2 : name - 1;
    return ReturnsTensor(m) && dot > 0 && ReceiverIsTensor(s, T, use, dot - 1, budget - 1);
  }
  if (before.IsPunct("::")) {
    size_t first = name;
    while (first >= 2 && T[first - 1].IsPunct("::") && T[first - 2].IsIdent()) first -= 2;
    QualifiedName q = ChainAt(T, first);
    return q.parts.size() >= 2 && IsTorchRoot(q.parts.front()) && IsTensorCreationFunction(m);
  }
  return false;
}

// ChainIsTensor: the expression starting at T[begin] is a tensor variable or a torch:: creation
// call followed by at least one method call, every one of which returns a tensor
// (x.contiguous(), torch::zeros_like(x).view(-1)).
bool ChainIsTensor(const SourceScan& s, const std::vector<Token>& T, size_t begin) {
  if (begin >= T.size() || !T[begin].IsIdent()) return false;
  size_t pos = begin + 1;
  if (s.tensor_use[begin] && !s.declaration[begin]) {
    if (begin > 0 && (T[begin - 1].IsPunct(".") || T[begin - 1].IsPunct("->"))) return false;
  } else if (StartsChain(T, begin)) {
    QualifiedName q = ChainAt(T, begin);
    if (q.parts.size() < 2 || !IsTorchRoot(q.parts.front()) ||
        !IsTensorCreationFunction(q.parts.back())) {
      return false;
    }
    pos = q.last + 1;
    if (pos >= T.size() || !T[pos].IsPunct("(")) return false;
    pos = MatchClose(T, pos) + 1;
  } else {
    return false;
  }
  bool called = false;
  while (pos + 2 < T.size() && (T[pos].IsPunct(".") || T[pos].IsPunct("->")) &&
         T[pos + 1].IsIdent()) {
    const std::string& m = T[pos + 1].text;
    size_t next = pos + 2;
    if (T[next].IsPunct("<")) next = SkipAngles(T, next);
    if (next >= T.size() || !T[next].IsPunct("(") || !ReturnsTensor(m)) return false;
    pos = MatchClose(T, next) + 1;
    called = true;
  }
  return called;
}

// IsCudaDevice: T[begin, end) names the CUDA device and nothing else: kCUDA (qualified or not),
// DeviceType::CUDA, or Device(kCUDA[, index]) / Device("cuda..."). Never the CPU: moving data to
// the host is how host computation hides from device time (host_roundtrip).
bool IsCudaDevice(const SourceScan& s, const std::vector<Token>& T, size_t begin, size_t end) {
  size_t k = begin;
  if (k < end && T[k].IsPunct("::")) ++k;
  if (k + 1 < end && T[k].IsIdent() && IsTorchRoot(T[k].text) && T[k + 1].IsPunct("::")) k += 2;
  if (k >= end || !T[k].IsIdent()) return false;
  const std::string& name = T[k].text;
  if (k + 1 == end) return name == "kCUDA";
  if (name == "DeviceType")
    return k + 3 == end && T[k + 1].IsPunct("::") && T[k + 2].IsIdent("CUDA");
  if (name != "Device" || !T[k + 1].IsPunct("(") || MatchClose(T, k + 1) != end - 1) return false;
  // The constructor's first argument: the device type or its string.
  size_t first = k + 2;
  if (first < end && T[first].kind == TokenKind::kString) {
    return StartsWith(s.src.Original(T[first]), "\"cuda");
  }
  size_t stop = first;
  while (stop < end - 1 && !T[stop].IsPunct(",")) ++stop;
  return IsCudaDevice(s, T, first, stop);
}

// MovesDataOnly: the method call T[name](...) moves or lays out data without computing:
// contiguous(...), cuda(), to() with a device — the CUDA device or `<tensor>.device()` — and
// copy_(src[, non_blocking]) into a tensor; nothing else (a dtype, options or another tensor as
// to()'s argument converts values). Whether a copy did the model's work, or converted dtype or
// device (a copy_ between float32 and float16 tensors, from the host), is for the run-time layers:
// the op guard lets a copy through only when it keeps dtype, device and layout, and the kernel
// audit counts torch's copy kernels as copies (own kernels must carry most of the device time).
bool MovesDataOnly(const SourceScan& s, const std::vector<Token>& T, const std::vector<bool>* use,
                   size_t name) {
  if (name + 1 >= T.size() || !T[name + 1].IsPunct("(")) return false;
  size_t close = MatchClose(T, name + 1);
  if (close >= T.size()) return false;
  const std::string& m = T[name].text;
  // reshape/flatten/view_as are views where the strides allow and copies otherwise, like
  // contiguous(): data movement (the kernel audit judges a copy that happens).
  if (m == "contiguous" || m == "reshape" || m == "flatten" || m == "view_as") return true;
  if (m == "cuda") return close == name + 2;
  if (m == "copy_") return close > name + 2;  // a source tensor (copy_() alone does not compile)
  if (m != "to") return false;
  size_t begin = name + 2;
  for (size_t k = begin; k < close; ++k) {  // one argument
    if (T[k].IsPunct(",")) return false;
    if (T[k].IsPunct("(") || T[k].IsPunct("[") || T[k].IsPunct("{")) k = MatchClose(T, k);
  }
  if (IsCudaDevice(s, T, begin, close)) return true;
  // x.to(y.device()) with y a tensor: y's device, whatever it is (a copy to the host is refused by
  // the run-time op guard).
  return use != nullptr && close >= begin + 5 && T[close - 1].IsPunct(")") &&
         T[close - 2].IsPunct("(") && T[close - 3].IsIdent("device") &&
         (T[close - 4].IsPunct(".") || T[close - 4].IsPunct("->")) &&
         ReceiverIsTensor(s, T, *use, close - 5);
}

// IntegerSubscriptEnd: T[i] is a tensor followed by one or more subscripts [e] whose index is
// an integer expression (literals, names that are not tensors, arithmetic: no call, member,
// brace, string, `::` or nested subscript, so no mask, index tensor, Slice or initializer list).
// Returns the index after the last `]`, or 0 when there is no such subscript. x[i] with an
// integer i is select(): a view.
size_t IntegerSubscriptEnd(const SourceScan& s, const std::vector<Token>& T, size_t i) {
  size_t pos = i + 1;
  bool any = false;
  while (pos < T.size() && T[pos].IsPunct("[")) {
    size_t close = MatchClose(T, pos);
    if (close >= T.size() || close == pos + 1) return 0;
    for (size_t k = pos + 1; k < close; ++k) {
      const Token& t = T[k];
      if (t.IsIdent()) {
        if (s.tensor_use[k]) return 0;
        continue;
      }
      if (t.kind == TokenKind::kNumber) continue;
      static const auto* ops =
          new std::unordered_set<std::string>(WordSet("+ - * / % ( ) << >> & | ^ ~"));
      if (t.kind != TokenKind::kPunct || !ops->count(t.text)) return 0;
      if (t.IsPunct("(") && k > pos + 1 && T[k - 1].IsIdent()) return 0;  // a call
    }
    pos = close + 1;
    any = true;
  }
  return any ? pos : 0;
}

// IntegerSelectPassesOn: the tensor T[i] indexed by integers (ending before T[end]) only yields
// a view to use further: a method call follows (checked as any method on a tensor), it
// initialises a declared variable (auto xb = x[i];), or it is a whole argument of a call (f(x[i])).
// Writes (x[i] = v, x[i] += v), arithmetic, comparisons and returns stay refused.
bool IntegerSelectPassesOn(const SourceScan& s, const std::vector<Token>& T, size_t i, size_t end) {
  if (end >= T.size() || i == 0) return false;
  const Token& next = T[end];
  if (next.IsPunct(".") || next.IsPunct("->")) return true;
  const Token& prev = T[i - 1];
  if ((next.IsPunct(";") || next.IsPunct(",")) && prev.IsPunct("=") && i >= 2 &&
      s.declaration[i - 2]) {
    return true;
  }
  if (!(next.IsPunct(",") || next.IsPunct(")")) || !(prev.IsPunct("(") || prev.IsPunct(","))) {
    return false;
  }
  // The enclosing parenthesis must open a call: a name, a template's `>` or a launch's `>>>`.
  size_t open = i - 1;
  int nest = 0;
  const size_t stop = i > kLookahead ? i - kLookahead : 0;
  while (open > stop) {
    const Token& t = T[open];
    if (t.IsPunct(")") || t.IsPunct("]") || t.IsPunct("}")) ++nest;
    if (t.IsPunct("(") || t.IsPunct("[") || t.IsPunct("{")) {
      if (nest == 0) break;
      --nest;
    }
    --open;
  }
  if (open == 0 || !T[open].IsPunct("(")) return false;
  const Token& callee = T[open - 1];
  return (callee.IsIdent() && !s.tensor_use[open - 1]) || callee.IsPunct(">") ||
         callee.IsPunct(">>>") || callee.IsPunct(">>");
}

}  // namespace

void TrackTensors(SourceScan& s) {
  const std::vector<Token>& T = s.code;
  s.tensor_use.assign(T.size(), false);
  s.declaration.assign(T.size(), false);
  // A stack: inner scopes on top; the `pending` top entries are parameters whose function body
  // (or statement, for a range-for) has not started yet.
  std::vector<LiveTensor> live;
  std::unordered_map<std::string, int> live_names;
  size_t pending = 0;
  auto pop = [&] {
    if (--live_names[live.back().name] == 0) live_names.erase(live.back().name);
    live.pop_back();
  };
  int depth = 0;
  int parens = 0;
  for (size_t i = 0; i < T.size(); ++i) {
    const Token& t = T[i];
    if (t.IsPunct("(")) ++parens;
    if (t.IsPunct(")")) parens = std::max(0, parens - 1);
    if (t.IsPunct("{")) {
      for (size_t k = 0; k < pending; ++k) live[live.size() - 1 - k].entered = true;
      pending = 0;
      ++depth;
      continue;
    }
    if (t.IsPunct("}")) {
      --depth;
      while (!live.empty() &&
             (live.back().depth > depth ||
              (live.back().param && live.back().entered && live.back().depth >= depth))) {
        pop();
      }
      pending = 0;
      continue;
    }
    if (t.IsPunct(";") && parens == 0) {
      for (; pending > 0 && !live.empty(); --pending) pop();  // a prototype, a braceless for
      continue;
    }
    if (!t.IsIdent()) continue;
    bool member =
        i > 0 && (T[i - 1].IsPunct(".") || T[i - 1].IsPunct("->") || T[i - 1].IsPunct("::"));
    if (!member && live_names.count(t.text)) s.tensor_use[i] = true;
    // Declarations: Tensor [const] [&|&&] name, and auto [&] name = <tensor expression>.
    size_t k = TensorTypeEnd(s, i);
    bool is_auto = t.IsIdent("auto");
    if (k == 0 && is_auto) k = i + 1;
    if (k == 0) continue;
    while (k < T.size() && (T[k].IsIdent("const") || T[k].IsPunct("&") || T[k].IsPunct("&&") ||
                            T[k].IsIdent("__restrict__"))) {
      ++k;
    }
    if (k + 1 >= T.size() || !T[k].IsIdent()) continue;
    const Token& after = T[k + 1];
    bool declares = after.IsPunct("=") || after.IsPunct(";") || after.IsPunct(",") ||
                    after.IsPunct(")") || after.IsPunct("{") || after.IsPunct(":");
    if (!declares) continue;
    if (is_auto) {
      if (!after.IsPunct("=")) continue;
      size_t end = k + 2;
      int nest = 0;
      while (end < T.size() && end < k + kLookahead) {
        if (T[end].IsPunct("(") || T[end].IsPunct("[") || T[end].IsPunct("{")) ++nest;
        if (T[end].IsPunct(")") || T[end].IsPunct("]") || T[end].IsPunct("}")) --nest;
        if (nest < 0 || (nest == 0 && (T[end].IsPunct(";") || T[end].IsPunct(",")))) break;
        ++end;
      }
      auto is_live = [&](const std::string& name) { return live_names.count(name) > 0; };
      if (!RhsIsTensor(s, k + 2, end, is_live)) continue;
    }
    s.declaration[k] = true;
    const bool param = parens > 0;
    if (!param) pending = 0;  // a local after parameters: their scope has begun
    live.push_back({T[k].text, depth, param});
    ++live_names[T[k].text];
    if (param) ++pending;
    i = k;  // the declared name is not a use
  }
}

// What a tensor-valued receiver may do in C++, named by every tensor_compute message about a
// method.
constexpr const char* kAllowedOnTensors =
    "allowed in C++: metadata (sizes, strides, dtype, data_ptr, packed_accessor ...), views "
    "(view, reshape, flatten, x[i] with an integer i ...), "
    "contiguous(), cuda(), to(x.device()), copy_() between tensors of one dtype and device, and "
    "torch::zeros/ones/full for a constant tensor; "
    "convert dtypes and compute in your own kernels";

// CheckMethods: method calls that run ATen operators. `use` marks tensor variables (null for
// directive tokens, where only the ATen compute names on unknown receivers are checked).
void CheckMethods(SourceScan& s, const std::vector<Token>& T, const std::vector<bool>* use) {
  for (size_t i = 0; i + 1 < T.size(); ++i) {
    if (!(T[i].IsPunct(".") || T[i].IsPunct("->"))) continue;
    size_t name = i + 1;
    if (T[name].IsIdent("template") && name + 1 < T.size()) ++name;
    if (!T[name].IsIdent() || name + 1 >= T.size()) continue;
    if (!(T[name + 1].IsPunct("(") || T[name + 1].IsPunct("<"))) continue;
    const std::string& m = T[name].text;
    if (m == "attr" && T[name + 1].IsPunct("(")) {
      s.Emit(kPythonApi, T[name].line, "`.attr(...)` reaches Python objects from C++");
      continue;
    }
    if (MovesDataOnly(s, T, use, name)) continue;
    bool tensor = use != nullptr && i > 0 && ReceiverIsTensor(s, T, *use, i - 1);
    if (tensor) {
      if (!TensorMetadataMethods().count(m) && !TensorViewMethods().count(m)) {
        s.Emit(kTensorCompute, T[name].line,
               "`." + m + "()` on a tensor runs an ATen operator; " + kAllowedOnTensors);
      }
    } else if (AtenComputeMethods().count(m)) {
      s.Emit(kTensorCompute, T[name].line,
             "`." + m + "()` is an ATen tensor operator; compute in your own kernels (" +
                 kAllowedOnTensors + ")");
    }
  }
}

void CheckTensorOperators(SourceScan& s) {
  static const auto* binary = new std::unordered_set<std::string>(
      WordSet("+ - * / % ^ | & == != < > <= >= += -= *= /= %= ^= |= &= <<= >>= ~"));
  const std::vector<Token>& T = s.code;
  for (size_t i = 0; i < T.size(); ++i) {
    if (!s.tensor_use[i]) continue;
    const std::string& x = T[i].text;
    if (i + 1 < T.size() && (T[i + 1].IsPunct(".") || T[i + 1].IsPunct("->"))) continue;
    if (i + 1 < T.size()) {
      const Token& next = T[i + 1];
      if (next.IsPunct("[")) {
        size_t end = IntegerSubscriptEnd(s, T, i);
        if (end == 0 || !IntegerSelectPassesOn(s, T, i, end)) {
          s.Emit(kTensorCompute, T[i].line,
                 "indexing tensor `" + x +
                     "` runs ATen operators (masks, index tensors, writes, arithmetic); index "
                     "data_ptr() in a kernel (x[i] with an integer i is allowed to take a "
                     "sub-tensor or its data_ptr())");
          continue;
        }
      }
      if (next.kind == TokenKind::kPunct && binary->count(next.text) && !next.IsPunct("~")) {
        s.Emit(kTensorCompute, T[i].line,
               "`" + x + " " + next.text + "` is tensor arithmetic in ATen; compute in a kernel");
        continue;
      }
    }
    if (i > 0) {
      const Token& prev = T[i - 1];
      if (prev.kind != TokenKind::kPunct || !binary->count(prev.text)) continue;
      bool pointer_like = prev.IsPunct("*") || prev.IsPunct("&");
      if (pointer_like && !(i >= 2 && IsOperandEnd(T[i - 2]))) continue;
      s.Emit(kTensorCompute, T[i].line,
             "`" + prev.text + " " + x + "` is tensor arithmetic in ATen; compute in a kernel");
    }
  }
  // Operands that are tensor expressions rather than names: torch::zeros_like(x) + x.contiguous(),
  // x.view(-1) * 2. (< and > are left out: they also close template arguments.)
  for (size_t k = 1; k + 1 < T.size(); ++k) {
    const Token& op = T[k];
    if (op.kind != TokenKind::kPunct || !binary->count(op.text) || op.IsPunct("~") ||
        op.IsPunct("<") || op.IsPunct(">")) {
      continue;
    }
    bool left = (T[k - 1].IsPunct(")") || T[k - 1].IsPunct("]")) &&
                ReceiverIsTensor(s, T, s.tensor_use, k - 1);
    bool binary_use = IsOperandEnd(T[k - 1]) || !(op.IsPunct("*") || op.IsPunct("&"));
    bool right = binary_use && ChainIsTensor(s, T, k + 1);
    if (left || right) {
      s.Emit(kTensorCompute, op.line,
             "`" + op.text +
                 "` on a tensor expression is tensor arithmetic in ATen; compute in a "
                 "kernel");
    }
  }
}

// CheckAdlCalls: relu(x) with a Tensor x finds at::relu by argument-dependent lookup.
void CheckAdlCalls(SourceScan& s) {
  const std::vector<Token>& T = s.code;
  for (size_t i = 0; i + 2 < T.size(); ++i) {
    if (!T[i].IsIdent() || !T[i + 1].IsPunct("(")) continue;
    if (i > 0 && (T[i - 1].IsPunct(".") || T[i - 1].IsPunct("->") || T[i - 1].IsPunct("::"))) {
      continue;
    }
    const std::string& f = T[i].text;
    if (s.defined.count(f)) continue;
    if (!AtenComputeMethods().count(f) && !CommonMethodNames().count(f) &&
        !AtenExtraFunctions().count(f)) {
      continue;
    }
    size_t close = std::min(MatchClose(T, i + 1), i + kLookahead);
    for (size_t k = i + 2; k < close && k + 1 < T.size(); ++k) {
      const Token& before = T[k - 1];
      const Token& after = T[k + 1];
      size_t end = k + 1;  // past integer subscripts: relu(x[0]) is at::relu too
      while (end < close && T[end].IsPunct("[")) end = MatchClose(T, end) + 1;
      const Token& last = end < T.size() ? T[end] : after;
      bool whole_argument = (before.IsPunct("(") || before.IsPunct(",") || before.IsPunct("{")) &&
                            (last.IsPunct(",") || last.IsPunct(")") || last.IsPunct("}"));
      if (s.tensor_use[k] && whole_argument) {
        s.Emit(kTorchCompute, T[i].line,
               "`" + f + "(" + T[k].text + ", ...)` on a tensor calls at::" + f +
                   " (argument-dependent lookup); compute in your own kernels");
        break;
      }
    }
  }
}

size_t SetDeviceReceiver(const std::vector<Token>& T, size_t i) {
  if (i + 7 >= T.size() || !T[i].IsIdent("cudaSetDevice") || T[i].in_directive) return 0;
  if (i > 0 && (T[i - 1].IsPunct(".") || T[i - 1].IsPunct("->") || T[i - 1].IsPunct("::"))) {
    return 0;
  }
  if (!T[i + 1].IsPunct("(") || !T[i + 2].IsIdent() || !T[i + 3].IsPunct(".")) return 0;
  auto empty_call = [&](size_t k) { return T[k + 1].IsPunct("(") && T[k + 2].IsPunct(")"); };
  if (T[i + 4].IsIdent("get_device") && empty_call(i + 4) && T[i + 7].IsPunct(")")) return i + 2;
  if (i + 11 < T.size() && T[i + 4].IsIdent("device") && empty_call(i + 4) &&
      T[i + 7].IsPunct(".") && T[i + 8].IsIdent("index") && empty_call(i + 8) &&
      T[i + 11].IsPunct(")")) {
    return i + 2;
  }
  return 0;
}

void CheckSetDevice(SourceScan& s) {
  const std::vector<Token>& T = s.code;
  for (size_t i = 0; i < T.size(); ++i) {
    size_t r = SetDeviceReceiver(T, i);
    if (r != 0 && !s.tensor_use[r]) {
      s.Emit(kDeviceState, T[i].line,
             "`cudaSetDevice` to the device of `" + T[r].text +
                 "`, which is not a tensor, changes the current device for the rest of the "
                 "process; for the call's device use c10::cuda::CUDAGuard guard(x.device()), or "
                 "cudaSetDevice(x.get_device()) with a tensor x");
    }
  }
}

}  // namespace cuda_agent
