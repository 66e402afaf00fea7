// http_api_test.cc — the OpenAPI document and the route table describe the same routes, and the
// document is well formed (every $ref resolves). The routes' behaviour is tested over real sockets
// in tests/server/.
#include "server/http_api.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

namespace cuda_agent {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST(HttpApi, OpenApiListsExactlyTheRoutes) {
  Json doc = OpenApiDocument("1.2.3");
  EXPECT_EQ(doc["openapi"], "3.1.0");
  EXPECT_EQ(doc["info"]["version"], "1.2.3");
  std::set<std::pair<std::string, std::string>> documented, served;
  for (const auto& [path, ops] : doc["paths"].items()) {
    for (const auto& [method, op] : ops.items()) {
      documented.insert({path, method});
      EXPECT_TRUE(op.contains("responses")) << path;
    }
  }
  for (const HttpApi::Route& r : HttpApi::Routes()) served.insert({r.pattern, Lower(r.method)});
  EXPECT_EQ(documented, served);
  // The open routes are those the document exempts from the bearer scheme; the status page's
  // document names the status scheme (Basic, the status token) beside the bearer.
  for (const HttpApi::Route& r : HttpApi::Routes()) {
    const Json& op = doc["paths"][r.pattern][Lower(r.method)];
    EXPECT_EQ(r.access == HttpApi::Access::kOpen, op.contains("security") && op["security"].empty())
        << r.pattern;
    EXPECT_EQ(r.access == HttpApi::Access::kStatus,
              op.contains("security") && op["security"].dump().find("status") != std::string::npos)
        << r.pattern;
  }
  EXPECT_EQ(doc["components"]["securitySchemes"]["status"]["scheme"], "basic");
}

TEST(HttpApi, EveryRefResolves) {
  Json doc = OpenApiDocument("");
  std::string text = doc.dump();
  std::regex ref("\"\\$ref\":\"#/components/schemas/(\\w+)\"");
  int count = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), ref); it != std::sregex_iterator();
       ++it, ++count) {
    EXPECT_TRUE(doc["components"]["schemas"].contains((*it)[1].str())) << (*it)[1].str();
  }
  EXPECT_GT(count, 10);
}

TEST(HttpApi, ErrorResponseCarriesRetryAfter) {
  HttpResponse r = ErrorResponse({429, "busy", "full", 2.2});
  EXPECT_EQ(r.status, 429);
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].first, "Retry-After");
  EXPECT_EQ(r.headers[0].second, "3");
  Json body = Json::parse(r.body);
  EXPECT_EQ(body["error"]["code"], "busy");
  EXPECT_EQ(body["error"]["message"], "full");
}

}  // namespace
}  // namespace cuda_agent
