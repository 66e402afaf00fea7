// tokens.h — helpers over the lexer's tokens (judge/cpp_lexer.h) that every rule family uses:
// word lists, bracket matching, qualified names a::b::c, preprocessor directives one by one.
//
//   QualifiedName q = ChainAt(tokens, i);      // tokens[i] starts a chain: StartsChain
//   if (IsTorchRoot(q.parts.front())) ...
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "judge/cpp_lexer.h"

namespace cuda_agent {

// kLookahead bounds the scans that look for the end of a declaration or a template argument
// list, so that no input makes the scan quadratic.
inline constexpr size_t kLookahead = 256;

bool StartsWith(std::string_view s, std::string_view p);
bool EndsWith(std::string_view s, std::string_view p);
bool Contains(std::string_view s, std::string_view p);
// WordSet splits a list of words separated by white space.
std::unordered_set<std::string> WordSet(std::string_view words);

// NotFunctionNames: keywords that look like a call when followed by "(".
const std::unordered_set<std::string>& NotFunctionNames();
// IsOperandEnd: the token can end an operand (so a following * or & is binary).
bool IsOperandEnd(const Token& t);

// MatchClose returns the index of the bracket closing T[open] ("(", "[" or "{"), or T.size().
// T must have been paired (PairBrackets).
size_t MatchClose(const std::vector<Token>& T, size_t open);
// MatchOpen returns the index of the bracket opening T[close], or T.size().
size_t MatchOpen(const std::vector<Token>& T, size_t close);
// SkipAngles returns the index after the ">" matching the "<" at `open` (a template argument
// list), or `open` when the brackets do not balance before a ";" or "{".
size_t SkipAngles(const std::vector<Token>& T, size_t open);

// QualifiedName is a chain a::b::c of identifiers in the token list.
struct QualifiedName {
  std::vector<std::string> parts;
  size_t first = 0;     // index of the first identifier
  size_t last = 0;      // index of the last identifier
  bool member = false;  // preceded by . or ->
};

bool IsTorchRoot(const std::string& root);
// ChainAt reads the qualified name starting at identifier `i` (which must start the chain).
QualifiedName ChainAt(const std::vector<Token>& T, size_t i);
// StartsChain: T[i] is an identifier that is not the continuation of a::b (after "a::" or
// "T<..>::").
bool StartsChain(const std::vector<Token>& T, size_t i);
// Join writes parts as a::b::c.
std::string Join(const std::vector<std::string>& parts);
// DirectiveGroups splits the directive tokens into one list per directive.
std::vector<std::vector<Token>> DirectiveGroups(const std::vector<Token>& all);

}  // namespace cuda_agent
