// fuzz_cpp_lexer.cc — libFuzzer target for the candidate-source lexer (src/judge/cpp_lexer.h): any
// bytes must lex without a crash, and the lexer's documented invariants must hold.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "judge/cpp_lexer.h"

using cuda_agent::LexedSource;
using cuda_agent::Token;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  LexedSource src = cuda_agent::LexSource(text);
  // Blanking replaces characters one for one; every character of `spliced` has a line.
  FUZZ_CHECK(src.code.size() == src.spliced.size());
  FUZZ_CHECK(src.line_of.size() == src.spliced.size());
  FUZZ_CHECK(src.spliced.size() <= text.size());
  int last_line = 1;
  for (int line : src.line_of) {
    FUZZ_CHECK(line >= last_line);  // lines never go back
    last_line = line;
  }
  size_t last_offset = 0;
  for (size_t k = 0; k < src.tokens.size(); ++k) {
    const Token& t = src.tokens[k];
    FUZZ_CHECK(!t.text.empty());
    FUZZ_CHECK(t.offset >= last_offset);  // tokens in source order, never overlapping
    FUZZ_CHECK(t.offset + t.text.size() <= src.code.size());
    FUZZ_CHECK(std::string_view(src.code).substr(t.offset, t.text.size()) == t.text);
    FUZZ_CHECK(src.Original(t).size() == t.text.size());
    FUZZ_CHECK(t.line == src.line_of[t.offset]);
    last_offset = t.offset + t.text.size();
    if (t.partner != Token::kNoPartner) {  // bracket partners are mutual
      FUZZ_CHECK(t.partner < src.tokens.size());
      FUZZ_CHECK(src.tokens[t.partner].partner == k);
    }
  }
  for (const auto& inc : src.includes) {
    FUZZ_CHECK(inc.line >= 1 && inc.line <= last_line);
    FUZZ_CHECK(!inc.computed || inc.target.empty());
  }
  return 0;
}
