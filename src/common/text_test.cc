// text_test.cc — the small text helpers: trimming, splitting into lines, escaping for HTML.
#include "common/text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cuda_agent {
namespace {

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view line : SplitLines(text)) out.emplace_back(line);
  return out;
}

TEST(TextTest, SplitLinesKeepsEmptyLinesInsideAndALastLineWithoutNewline) {
  EXPECT_EQ(Lines(""), std::vector<std::string>{});
  EXPECT_EQ(Lines("a\n"), std::vector<std::string>{"a"});
  EXPECT_EQ(Lines("a\n\nb"), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Lines("\r\nx\r\n"), (std::vector<std::string>{"\r", "x\r"}));
}

TEST(TextTest, TrimSpaceDropsSpacesTabsAndCarriageReturns) {
  EXPECT_EQ(TrimSpace(" \t a b \r"), "a b");
  EXPECT_EQ(TrimSpace(" \r\t"), "");
}

TEST(TextTest, HtmlEscapeEscapesTheFiveCharactersAndNothingElse) {
  EXPECT_EQ(HtmlEscape("a\"b'c<d>&"), "a&quot;b&#39;c&lt;d&gt;&amp;");
  EXPECT_EQ(HtmlEscape("&amp;"), "&amp;amp;");  // escaped text is escaped again, not passed through
  EXPECT_EQ(HtmlEscape("plain text / 1.5x, é"), "plain text / 1.5x, é");
  EXPECT_EQ(HtmlEscape(""), "");
}

}  // namespace
}  // namespace cuda_agent
