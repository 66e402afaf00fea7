// tokens.cc — helpers over the lexer's tokens that every rule family uses.
#include "judge/static/tokens.h"

#include <sstream>

namespace cuda_agent {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
bool Contains(std::string_view s, std::string_view p) {
  return s.find(p) != std::string_view::npos;
}

std::unordered_set<std::string> WordSet(std::string_view words) {
  std::unordered_set<std::string> set;
  std::istringstream in{std::string(words)};
  std::string w;
  while (in >> w) set.insert(w);
  return set;
}

const std::unordered_set<std::string>& NotFunctionNames() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      "if for while switch return catch sizeof alignof decltype typeid static_assert noexcept "
      "new delete throw case do else using operator"));
  return *set;
}

bool IsOperandEnd(const Token& t) {
  return t.kind == TokenKind::kIdentifier || t.kind == TokenKind::kNumber || t.IsPunct(")") ||
         t.IsPunct("]");
}

// MatchClose returns the index of the bracket closing T[open] ("(", "[" or "{"), or T.size().
// T must have been paired (PairBrackets).
size_t MatchClose(const std::vector<Token>& T, size_t open) {
  return T[open].partner == Token::kNoPartner ? T.size() : T[open].partner;
}

// MatchOpen returns the index of the bracket opening T[close], or T.size().
size_t MatchOpen(const std::vector<Token>& T, size_t close) {
  return T[close].partner == Token::kNoPartner ? T.size() : T[close].partner;
}

// SkipAngles returns the index after the ">" matching the "<" at `open` (a template argument
// list), or `open` when the brackets do not balance before a ";" or "{".
size_t SkipAngles(const std::vector<Token>& T, size_t open) {
  int depth = 0;
  for (size_t k = open; k < T.size() && k < open + kLookahead; ++k) {
    if (T[k].IsPunct("<")) ++depth;
    if (T[k].IsPunct(">")) --depth;
    if (T[k].IsPunct(">>")) depth -= 2;
    if (depth <= 0) return k + 1;
    if (T[k].IsPunct(";") || T[k].IsPunct("{")) break;
  }
  return open;
}

bool IsTorchRoot(const std::string& root) {
  return root == "torch" || root == "at" || root == "c10";
}

// ChainAt reads the qualified name starting at identifier `i` (which must start the chain).
QualifiedName ChainAt(const std::vector<Token>& T, size_t i) {
  QualifiedName q;
  q.first = i;
  q.parts.push_back(T[i].text);
  size_t j = i;
  while (j + 2 < T.size() && T[j + 1].IsPunct("::") && T[j + 2].IsIdent()) {
    j += 2;
    if (T[j].IsIdent("template") && j + 2 < T.size() && T[j + 1].IsIdent()) ++j;
    q.parts.push_back(T[j].text);
  }
  q.last = j;
  if (i > 0 && (T[i - 1].IsPunct(".") || T[i - 1].IsPunct("->"))) q.member = true;
  if (i > 1 && T[i - 1].IsIdent("template") && (T[i - 2].IsPunct(".") || T[i - 2].IsPunct("->"))) {
    q.member = true;
  }
  return q;
}

// StartsChain: T[i] is an identifier that is not the continuation of a::b (after "a::" or
// "T<..>::").
bool StartsChain(const std::vector<Token>& T, size_t i) {
  if (!T[i].IsIdent()) return false;
  if (i >= 2 && T[i - 1].IsPunct("::") && (T[i - 2].IsIdent() || T[i - 2].IsPunct(">"))) {
    return false;
  }
  return true;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : "::") + p;
  return s;
}

// DirectiveGroups splits the directive tokens into one list per directive.
std::vector<std::vector<Token>> DirectiveGroups(const std::vector<Token>& all) {
  std::vector<std::vector<Token>> groups;
  for (const Token& t : all) {
    if (!t.in_directive) continue;
    if (t.directive_start || groups.empty()) groups.emplace_back();
    groups.back().push_back(t);
  }
  for (std::vector<Token>& g : groups) PairBrackets(g);
  return groups;
}

}  // namespace cuda_agent
