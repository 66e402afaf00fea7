// cpp_lexer.cc — line splicing, comment/literal blanking, tokens and #include directives.
#include "judge/cpp_lexer.h"

#include <array>
#include <cctype>

namespace cuda_agent {
namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Splice removes every backslash-newline and records the original line of each kept character.
void Splice(std::string_view text, std::string& out, std::vector<int>& line_of) {
  out.reserve(text.size());
  line_of.reserve(text.size());
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\') {
      size_t j = i + 1;
      if (j < text.size() && text[j] == '\r') ++j;
      if (j < text.size() && text[j] == '\n') {
        ++line;
        i = j;
        continue;
      }
    }
    out.push_back(c);
    line_of.push_back(line);
    if (c == '\n') ++line;
  }
}

// WordBefore returns the identifier characters that end right before `pos`.
std::string_view WordBefore(std::string_view s, size_t pos) {
  size_t begin = pos;
  while (begin > 0 && IsIdentChar(s[begin - 1])) --begin;
  return s.substr(begin, pos - begin);
}

void Blank(std::string& code, size_t begin, size_t end) {
  for (size_t k = begin; k < end && k < code.size(); ++k) {
    if (code[k] != '\n') code[k] = ' ';
  }
}

// BlankCommentsAndLiterals fills `code` from `s`: comments and literal contents become spaces.
void BlankCommentsAndLiterals(const std::string& s, std::string& code) {
  code = s;
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    char c = s[i];
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      size_t end = s.find('\n', i);
      if (end == std::string::npos) end = n;
      Blank(code, i, end);
      i = end;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      size_t end = s.find("*/", i + 2);
      end = end == std::string::npos ? n : end + 2;
      Blank(code, i, end);
      i = end;
    } else if (c == '"') {
      std::string_view prefix = WordBefore(s, i);
      bool raw =
          prefix == "R" || prefix == "u8R" || prefix == "uR" || prefix == "UR" || prefix == "LR";
      if (raw) {
        size_t open = s.find('(', i + 1);
        if (open == std::string::npos) open = n;
        std::string closing = ")" + s.substr(i + 1, open - i - 1) + "\"";
        size_t end = s.find(closing, open);
        end = end == std::string::npos ? n : end + closing.size();
        Blank(code, i + 1, end - 1);
        i = end;
        continue;
      }
      size_t j = i + 1;
      while (j < n && s[j] != '"' && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      Blank(code, i + 1, std::min(j, n));
      i = j + 1;
    } else if (c == '\'') {
      // A digit separator (1'000) continues a number; anything else opens a character literal.
      std::string_view word = WordBefore(s, i);
      if (!word.empty() && IsDigit(word.front())) {
        ++i;
        continue;
      }
      size_t j = i + 1;
      while (j < n && s[j] != '\'' && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      Blank(code, i + 1, std::min(j, n));
      i = j + 1;
    } else if (IsDigit(c) || (c == '.' && i + 1 < n && IsDigit(s[i + 1]))) {
      // A pp-number, so that 0x1e+5 or 1'0 never starts anything else.
      ++i;
      while (i < n) {
        char d = s[i];
        if ((d == '+' || d == '-') &&
            (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P')) {
          ++i;
        } else if (IsIdentChar(d) || d == '.' ||
                   (d == '\'' && i + 1 < n && IsIdentChar(s[i + 1]))) {
          ++i;
        } else {
          break;
        }
      }
    } else {
      ++i;
    }
  }
}

constexpr std::array<std::string_view, 22> kPuncts3 = {
    "%:%:", "<<=", ">>=", "...", "->*", "%:", "::", "->", "##", "<<", ">>",
    "<=",   ">=",  "==",  "!=",  "&&",  "||", "++", "--", "+=", "-=", "*="};
constexpr std::array<std::string_view, 6> kPuncts2More = {"/=", "%=", "&=", "|=", "^=", ".*"};

size_t PunctLength(std::string_view rest) {
  for (std::string_view p : kPuncts3) {
    if (rest.substr(0, p.size()) == p) return p.size();
  }
  for (std::string_view p : kPuncts2More) {
    if (rest.substr(0, p.size()) == p) return p.size();
  }
  return 1;
}

struct LineSpan {
  size_t begin;
  size_t end;  // exclusive, at the '\n' or the end
};

std::vector<LineSpan> Lines(const std::string& code) {
  std::vector<LineSpan> lines;
  size_t begin = 0;
  while (begin <= code.size()) {
    size_t end = code.find('\n', begin);
    if (end == std::string::npos) end = code.size();
    lines.push_back({begin, end});
    if (end == code.size()) break;
    begin = end + 1;
  }
  return lines;
}

// ParseInclude reads the header name of an include-like directive starting at `pos` of a line.
Include ParseInclude(const LexedSource& src, size_t pos, size_t end, int line,
                     std::string directive) {
  Include inc;
  inc.line = line;
  inc.directive = std::move(directive);
  while (pos < end && std::isspace(static_cast<unsigned char>(src.code[pos]))) ++pos;
  if (pos < end && (src.code[pos] == '<' || src.code[pos] == '"')) {
    char close = src.code[pos] == '<' ? '>' : '"';
    size_t stop = src.code.find(close, pos + 1);
    if (stop != std::string::npos && stop < end) {
      inc.angled = close == '>';
      inc.target = src.spliced.substr(pos + 1, stop - pos - 1);
      return inc;
    }
  }
  inc.computed = true;
  return inc;
}

void Tokenize(LexedSource& src, size_t begin, size_t end, bool in_directive) {
  const std::string& code = src.code;
  size_t i = begin;
  while (i < end) {
    char c = code[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Token t;
    t.offset = i;
    t.line = src.line_of[i];
    t.in_directive = in_directive;
    size_t j = i + 1;
    if (IsIdentStart(c)) {
      while (j < end && IsIdentChar(code[j])) ++j;
      // A literal prefix (u8"..", L'x', R"(..)") belongs to the literal that follows.
      if (j < end && (code[j] == '"' || code[j] == '\'')) {
        std::string_view word(code.data() + i, j - i);
        if (word == "u8" || word == "u" || word == "U" || word == "L" || word == "R" ||
            word == "u8R" || word == "uR" || word == "UR" || word == "LR") {
          i = j;
          continue;
        }
      }
      t.kind = TokenKind::kIdentifier;
    } else if (IsDigit(c) || (c == '.' && i + 1 < end && IsDigit(code[i + 1]))) {
      while (j < end) {
        char d = code[j];
        if ((d == '+' || d == '-') && (code[j - 1] == 'e' || code[j - 1] == 'E' ||
                                       code[j - 1] == 'p' || code[j - 1] == 'P')) {
          ++j;
        } else if (IsIdentChar(d) || d == '.' || d == '\'') {
          ++j;
        } else {
          break;
        }
      }
      t.kind = TokenKind::kNumber;
    } else if (c == '"' || c == '\'') {
      // Contents are blanked, so the literal ends at the next quote of the same kind (raw
      // strings included: their body is blank too).
      size_t stop = code.find(c, i + 1);
      j = stop == std::string::npos || stop >= end ? end : stop + 1;
      t.kind = c == '"' ? TokenKind::kString : TokenKind::kChar;
    } else {
      j = i + PunctLength(std::string_view(code).substr(i, end - i));
      t.kind = TokenKind::kPunct;
    }
    t.text = code.substr(i, j - i);
    src.tokens.push_back(std::move(t));
    i = j;
  }
}

}  // namespace

void PairBrackets(std::vector<Token>& tokens) {
  std::vector<size_t> open;
  for (size_t i = 0; i < tokens.size(); ++i) {
    Token& t = tokens[i];
    t.partner = Token::kNoPartner;
    if (t.kind != TokenKind::kPunct) continue;
    if (t.text == "(" || t.text == "[" || t.text == "{") {
      open.push_back(i);
      continue;
    }
    const char* want = t.text == ")" ? "(" : t.text == "]" ? "[" : t.text == "}" ? "{" : nullptr;
    if (want == nullptr || open.empty() || tokens[open.back()].text != want) continue;
    t.partner = open.back();
    tokens[open.back()].partner = i;
    open.pop_back();
  }
}

LexedSource LexSource(std::string_view text) {
  LexedSource src;
  Splice(text, src.spliced, src.line_of);
  BlankCommentsAndLiterals(src.spliced, src.code);
  for (const LineSpan& span : Lines(src.code)) {
    size_t pos = span.begin;
    while (pos < span.end && std::isspace(static_cast<unsigned char>(src.code[pos]))) ++pos;
    const bool hash = pos < span.end && src.code[pos] == '#';
    const bool digraph = pos + 1 < span.end && src.code[pos] == '%' && src.code[pos + 1] == ':';
    if (!hash && !digraph) {
      Tokenize(src, span.begin, span.end, /*in_directive=*/false);
      continue;
    }
    size_t name_begin = pos + (digraph ? 2 : 1);
    while (name_begin < span.end && (src.code[name_begin] == ' ' || src.code[name_begin] == '\t')) {
      ++name_begin;
    }
    size_t name_end = name_begin;
    while (name_end < span.end && IsIdentChar(src.code[name_end])) ++name_end;
    std::string name = src.code.substr(name_begin, name_end - name_begin);
    if (name == "include" || name == "include_next" || name == "import" || name == "embed") {
      src.includes.push_back(
          ParseInclude(src, name_end, span.end, src.line_of[pos], std::move(name)));
      continue;
    }
    size_t first = src.tokens.size();
    Tokenize(src, pos, span.end, /*in_directive=*/true);
    if (first < src.tokens.size()) src.tokens[first].directive_start = true;
  }
  PairBrackets(src.tokens);
  return src;
}

}  // namespace cuda_agent
