// text_test.cc — the small text helpers: trimming and splitting into lines.
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

}  // namespace
}  // namespace cuda_agent
