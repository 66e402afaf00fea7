// cpp_lexer.h — a small lexer for candidate C++/CUDA sources, good enough for static rules: it
// splices continued lines, blanks comments and the contents of string/character literals (so no
// rule can fire on them), splits the rest into tokens with line numbers, and lists #include
// directives. It does not preprocess: macros are tokens like any other.
//
//   LexedSource src = LexSource(text);
//   for (const Token& t : src.tokens) if (t.Is("dlopen")) Report(t.line);
//   for (const Include& inc : src.includes) Check(inc.target, inc.angled);
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cuda_agent {

enum class TokenKind { kIdentifier, kNumber, kString, kChar, kPunct };

// Token is one lexical token. `text` is taken from LexedSource::code, where literal contents are
// blanked; LexedSource::Original(token) returns the source text of a literal.
struct Token {
  TokenKind kind = TokenKind::kPunct;
  std::string text;
  int line = 0;                  // 1-based line of the original file
  size_t offset = 0;             // into LexedSource::code (and LexedSource::spliced)
  bool in_directive = false;     // part of a preprocessor line (#define body, #pragma, #if ...)
  bool directive_start = false;  // the "#" (or "%:") that opens a preprocessor line
  // For ( [ { ) ] }: the index of the matching bracket in the token list that holds this token
  // (set by PairBrackets for that list); kNoPartner when unmatched or not a bracket.
  size_t partner = kNoPartner;
  static constexpr size_t kNoPartner = static_cast<size_t>(-1);

  bool Is(std::string_view s) const { return text == s; }
  bool IsIdent() const { return kind == TokenKind::kIdentifier; }
  bool IsIdent(std::string_view s) const { return kind == TokenKind::kIdentifier && text == s; }
  bool IsPunct(std::string_view s) const { return kind == TokenKind::kPunct && text == s; }
};

// Include is one #include (or #include_next, #import, #embed) directive.
struct Include {
  int line = 0;
  std::string directive;  // "include", "include_next", "import", "embed"
  std::string target;     // the header name between <> or ""; empty for a computed include
  bool angled = false;
  bool computed = false;  // `#include MACRO`: the name is not visible to the scan
};

struct LexedSource {
  std::string spliced;        // the text with backslash-newlines removed
  std::string code;           // `spliced` with comments and literal contents replaced by spaces
  std::vector<int> line_of;   // original 1-based line of every character of `spliced`
  std::vector<Token> tokens;  // every token, directives included (except #include lines)
  std::vector<Include> includes;

  // Original is the spliced source text of a token (the literal's contents for strings).
  std::string_view Original(const Token& t) const {
    return std::string_view(spliced).substr(t.offset, t.text.size());
  }
  // OriginalRange is the spliced source text between two offsets.
  std::string_view OriginalRange(size_t begin, size_t end) const {
    return std::string_view(spliced).substr(begin, end - begin);
  }
};

// PairBrackets sets `partner` on the brackets of `tokens` (matched with a stack; a closing bracket
// that does not match the innermost open one is left unmatched).
void PairBrackets(std::vector<Token>& tokens);

// LexSource lexes one file. It never fails: unterminated comments or literals run to the end.
LexedSource LexSource(std::string_view text);

}  // namespace cuda_agent
