// tensors.cc — tensor_compute: which variables are tensors (declared as Tensor, or auto from one,
// within their scope), and what may be done with them in C++ — metadata and views only; method
// calls, operators and indexing run ATen. Also torch_compute by argument-dependent lookup: relu(x)
// on a Tensor x calls at::relu.
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

// RhsIsTensor: does the expression s.code[begin, end) (the initialiser of an auto variable)
// yield a tensor? Only chains rooted at a tensor variable or torch::empty* are followed.
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
    if (!(last == "empty" || last == "empty_like" || last == "empty_strided")) return false;
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
    tensor = TensorViewMethods().count(m) || AtenComputeMethods().count(m) ||
             CommonMethodNames().count(m);
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
    bool returns_tensor = TensorViewMethods().count(m) || AtenComputeMethods().count(m) ||
                          CommonMethodNames().count(m);
    return returns_tensor && dot > 0 && ReceiverIsTensor(s, T, use, dot - 1, budget - 1);
  }
  if (before.IsPunct("::")) {
    size_t first = name;
    while (first >= 2 && T[first - 1].IsPunct("::") && T[first - 2].IsIdent()) first -= 2;
    QualifiedName q = ChainAt(T, first);
    return q.parts.size() >= 2 && IsTorchRoot(q.parts.front()) &&
           (m == "empty" || m == "empty_like" || m == "empty_strided");
  }
  return false;
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
    bool tensor = use != nullptr && i > 0 && ReceiverIsTensor(s, T, *use, i - 1);
    if (tensor) {
      if (!TensorMetadataMethods().count(m) && !TensorViewMethods().count(m)) {
        s.Emit(kTensorCompute, T[name].line,
               "`." + m +
                   "()` on a tensor runs an ATen operator; only metadata (sizes, strides, "
                   "dtype, data_ptr, options ...) and views are allowed in C++");
      }
    } else if (AtenComputeMethods().count(m)) {
      s.Emit(kTensorCompute, T[name].line,
             "`." + m + "()` is an ATen tensor operator; compute in your own kernels");
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
        s.Emit(kTensorCompute, T[i].line,
               "indexing tensor `" + x + "` runs ATen operators; index data_ptr() in a kernel");
        continue;
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
      bool whole_argument = (before.IsPunct("(") || before.IsPunct(",") || before.IsPunct("{")) &&
                            (after.IsPunct(",") || after.IsPunct(")") || after.IsPunct("}"));
      if (s.tensor_use[k] && whole_argument) {
        s.Emit(kTorchCompute, T[i].line,
               "`" + f + "(" + T[k].text + ", ...)` on a tensor calls at::" + f +
                   " (argument-dependent lookup); compute in your own kernels");
        break;
      }
    }
  }
}

}  // namespace cuda_agent
