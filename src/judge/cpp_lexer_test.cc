// cpp_lexer_test.cc — the lexer the static scan reads sources with: comments and literals blanked,
// lines kept, spliced lines joined, includes parsed.
#include "judge/cpp_lexer.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

TEST(StaticLexer, BlanksCommentsAndLiteralsKeepingLines) {
  LexedSource src = LexSource("int a; // at::relu\n/* dlopen\n */ const char* s = \"fork()\";\n");
  EXPECT_EQ(src.code.find("relu"), std::string::npos);
  EXPECT_EQ(src.code.find("dlopen"), std::string::npos);
  EXPECT_EQ(src.code.find("fork"), std::string::npos);
  ASSERT_FALSE(src.tokens.empty());
  const Token& last = src.tokens.back();
  EXPECT_TRUE(last.IsPunct(";"));
  EXPECT_EQ(last.line, 3);
  for (const Token& t : src.tokens) {
    if (t.kind == TokenKind::kString) {
      EXPECT_EQ(src.Original(t), "\"fork()\"");
    }
  }
}

TEST(StaticLexer, RawStringsCharsAndDigitSeparators) {
  LexedSource src =
      LexSource("auto r = R\"x(at::relu(\"y\"))x\"; char c = '\"'; int n = 1'000; dlsym");
  EXPECT_EQ(src.code.find("relu"), std::string::npos);
  EXPECT_NE(src.code.find("dlsym"), std::string::npos) << "the literal ended where it should";
  EXPECT_TRUE(src.tokens.back().IsIdent("dlsym"));
}

TEST(StaticLexer, SplicedLinesKeepOriginalLineNumbers) {
  LexedSource src = LexSource("#define X \\\n  at::re\\\nlu\nint y;\n");
  bool found = false;
  for (const Token& t : src.tokens) {
    if (t.IsIdent("relu")) found = true;
    if (t.IsIdent("y")) {
      EXPECT_EQ(t.line, 4);
    }
  }
  EXPECT_TRUE(found) << "a backslash-newline does not split an identifier";
}

TEST(StaticLexer, Includes) {
  LexedSource src = LexSource(
      "#include <cuda_runtime.h>\n  #  include \"../binding_registry.h\" // c\n#include MACRO\n"
      "#include_next <x.h>\n");
  ASSERT_EQ(src.includes.size(), 4u);
  EXPECT_EQ(src.includes[0].target, "cuda_runtime.h");
  EXPECT_TRUE(src.includes[0].angled);
  EXPECT_EQ(src.includes[1].target, "../binding_registry.h");
  EXPECT_FALSE(src.includes[1].angled);
  EXPECT_EQ(src.includes[1].line, 2);
  EXPECT_TRUE(src.includes[2].computed);
  EXPECT_EQ(src.includes[3].directive, "include_next");
}

}  // namespace
}  // namespace cuda_agent
