// llm_composer_test.cc — the LLM composer's pure parts: op sampling, the prompt, code extraction.
#include "synth/llm_composer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

std::vector<Json> SomeOps(int n) {
  std::vector<Json> ops;
  for (int i = 0; i < n; ++i)
    ops.push_back({{"name", "F.op" + std::to_string(i)}, {"kind", "functional"}});
  return ops;
}

TEST(LlmComposerTest, SamplesDistinctOpsReproducibly) {
  const CatalogOps ops{SomeOps(30), {}};
  const std::map<int, double> mix = {{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}};
  std::set<size_t> sizes;
  for (int k = 0; k < 200; ++k) {
    std::vector<Json> a = SampleOps(ops, mix, 3, 7, k);
    EXPECT_EQ(a, SampleOps(ops, mix, 3, 7, k));
    ASSERT_GE(a.size(), 1u);
    ASSERT_LE(a.size(), 3u);  // --max-ops
    std::set<std::string> names;
    for (const Json& op : a) names.insert(op["name"].get<std::string>());
    EXPECT_EQ(names.size(), a.size());
    sizes.insert(a.size());
  }
  EXPECT_EQ(sizes, (std::set<size_t>{1, 2, 3}));
  bool differs = false;
  for (int k = 0; k < 20; ++k)
    differs |= SampleOps(ops, mix, 3, 7, k) != SampleOps(ops, mix, 3, 8, k);
  EXPECT_TRUE(differs);
  EXPECT_EQ(SampleOps(ops, {{2, 1}}, 5, 1, 0).size(), 2u);
  // no transformers op in the catalog: its share is never drawn
  EXPECT_EQ(SampleOps(ops, {{kTransformersMixKey, 100}, {2, 1}}, 5, 1, 0).size(), 2u);
}

TEST(LlmComposerTest, TransformersOpsStaySingle) {
  CatalogOps ops{SomeOps(10), {}};
  for (int i = 0; i < 3; ++i)
    ops.transformers.push_back({{"name", "transformers.T" + std::to_string(i)}});
  const std::map<int, double> mix = {{kTransformersMixKey, 1}, {3, 1}};
  int single = 0;
  for (int k = 0; k < 100; ++k) {
    std::vector<Json> a = SampleOps(ops, mix, 5, 3, k);
    const bool transformers = a.front()["name"].get<std::string>().rfind("transformers.", 0) == 0;
    if (transformers) {
      ++single;
      EXPECT_EQ(a.size(), 1u) << "a transformers op is never chained";
    } else {
      EXPECT_EQ(a.size(), 3u);
      for (const Json& op : a)
        EXPECT_EQ(op["name"].get<std::string>().rfind("transformers.", 0), std::string::npos);
    }
  }
  EXPECT_GT(single, 25);
  EXPECT_LT(single, 75);
  const std::string p = ComposerPrompt({{{"name", "transformers.LlamaMLP"},
                                         {"kind", "module"},
                                         {"imports", "from a import B\nfrom c import D"}}},
                                       Device::kCuda, 1, 100);
  EXPECT_NE(p.find("imported with `from a import B`, `from c import D`"), std::string::npos) << p;
}

TEST(LlmComposerTest, PromptNamesTheOpsInOrder) {
  std::vector<Json> ops = {{{"name", "nn.Linear"},
                            {"kind", "module"},
                            {"template", "nn.Linear({i}, {o})"},
                            {"ranks", {2, 3}}},
                           {{"name", "F.gelu"}, {"kind", "functional"}}};
  const std::string p = ComposerPrompt(ops, Device::kCuda, 1, 100);
  ASSERT_NE(p.find("1. nn.Linear"), std::string::npos) << p;
  ASSERT_NE(p.find("2. F.gelu"), std::string::npos) << p;
  EXPECT_NE(p.find("rank 2, 3"), std::string::npos) << p;
  EXPECT_NE(p.find("between 1 and 100 ms"), std::string::npos) << p;
  EXPECT_NE(p.find("```python"), std::string::npos);
  EXPECT_NE(p.find("get_init_inputs()"), std::string::npos);
}

TEST(LlmComposerTest, ExtractsTheFirstPythonBlock) {
  EXPECT_EQ(ExtractPython("text\n```python\nx = 1\n```\nmore\n```python\ny = 2\n```\n").value(),
            "x = 1\n");
  EXPECT_EQ(ExtractPython("```bash\nls\n```\n```py\nz = 3\n```").value(), "z = 3\n");
  EXPECT_EQ(ExtractPython("```Python \r\nw = 4\n```").value(), "w = 4\n");
  EXPECT_FALSE(ExtractPython("no code at all").has_value());
  EXPECT_FALSE(ExtractPython("```\nx = 1\n```").has_value());     // no language: not python
  EXPECT_FALSE(ExtractPython("```python\nx = 1\n").has_value());  // never closed
  EXPECT_FALSE(ExtractPython("```python\n\n```").has_value());    // empty
}

TEST(LlmComposerTest, ComposableOpsMirrorsTheCatalogRule) {
  TestDir dir("llm_composer");
  Json ok = {{"name", "F.gelu"},  {"dtypes", {"float32"}}, {"finite", true},
             {"identity", false}, {"warning", nullptr},    {"stochastic", false}};
  Json catalog = {{"ops", Json::array()}};
  catalog["ops"].push_back(ok);
  for (auto [key, value] :
       std::vector<std::pair<std::string, Json>>{{"dtypes", Json::array({"float64"})},
                                                 {"finite", false},
                                                 {"identity", true},
                                                 {"warning", "implicit dim"},
                                                 {"stochastic", true}}) {
    Json bad = ok;
    bad["name"] = "bad_" + key;
    bad[key] = value;
    catalog["ops"].push_back(bad);
  }
  Json single = ok;
  single["name"] = "transformers.LlamaRMSNorm";
  single["source"] = "transformers";
  catalog["ops"].push_back(single);
  std::ofstream(dir.path() / "catalog.json") << catalog.dump();
  Result<CatalogOps> ops = ComposableOps(dir.path() / "catalog.json");
  ASSERT_TRUE(ops.ok()) << ops.status().ToString();
  ASSERT_EQ(ops->torch.size(), 1u);
  EXPECT_EQ(ops->torch.at(0)["name"], "F.gelu");
  ASSERT_EQ(ops->transformers.size(), 1u);
  EXPECT_EQ(ops->transformers.at(0)["name"], "transformers.LlamaRMSNorm");
  EXPECT_FALSE(ComposableOps(dir.path() / "missing.json").ok());
}

}  // namespace
}  // namespace cuda_agent
