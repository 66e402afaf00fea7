// llm_composer.cc — the LLM composer of `cuda-agent synth` (llm_composer.h).
#include "synth/llm_composer.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/fs.h"
#include "llm/llm_client.h"

namespace cuda_agent {

namespace {

// SplitMix64: a small generator whose sequence is the same on every platform (std:: distributions
// are not), so a candidate's ops depend on (seed, index) only.
struct SplitMix64 {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint64_t Below(uint64_t n) { return Next() % n; }
};

std::string Join(const Json& values, const std::string& sep) {
  std::string out;
  for (const auto& v : values) {
    if (!out.empty()) out += sep;
    out += v.is_string() ? v.get<std::string>() : v.dump();
  }
  return out;
}

std::string FormatMs(double ms) {
  std::ostringstream s;
  s << ms;
  return s.str();
}

// Rows reads DIR/llm_candidates.jsonl's rows (a last line cut short by a crash is removed).
Result<size_t> CountRows(const fs::path& path) {
  if (!fs::exists(path)) {
    if (Status s = WriteFileAtomic(path, ""); !s.ok()) return s;
    return size_t{0};
  }
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  std::string body = text.value();
  if (!body.empty() && body.back() != '\n') {
    body.erase(body.rfind('\n') == std::string::npos ? 0 : body.rfind('\n') + 1);
    if (Status s = WriteFileAtomic(path, body); !s.ok()) return s;
  }
  size_t rows = 0;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);)
    rows += line.find_first_not_of(" \t\r") != std::string::npos;
  return rows;
}

Status AppendRow(const fs::path& path, const Json& row) {
  std::ofstream f(path, std::ios::app | std::ios::binary);
  f << row.dump() << "\n";
  f.flush();
  return f ? OkStatus() : Internal("cannot append to " + path.string());
}

}  // namespace

Result<CatalogOps> ComposableOps(const fs::path& catalog_path) {
  Result<std::string> text = ReadFile(catalog_path);
  if (!text.ok())
    return Internal("the op catalog " + catalog_path.string() + ": " + text.status().message());
  Json catalog = Json::parse(text.value(), nullptr, false);
  if (!catalog.is_object() || !catalog.contains("ops") || !catalog["ops"].is_array()) {
    return Internal("the op catalog " + catalog_path.string() + " holds no \"ops\" list");
  }
  CatalogOps ops;
  for (const Json& op : catalog["ops"]) {
    const Json dtypes = op.value("dtypes", Json::array());
    const bool f32 = std::find(dtypes.begin(), dtypes.end(), Json("float32")) != dtypes.end();
    const Json warning = op.value("warning", Json());
    const bool warns =
        !(warning.is_null() || (warning.is_string() && warning.get<std::string>().empty()) ||
          (warning.is_boolean() && !warning.get<bool>()));
    if (f32 && op.value("finite", false) && !op.value("identity", false) && !warns &&
        !op.value("stochastic", false) && op.contains("name")) {
      (op.value("source", "") == "transformers" ? ops.transformers : ops.torch).push_back(op);
    }
  }
  return ops;
}

std::vector<Json> SampleOps(const CatalogOps& catalog, const std::map<int, double>& mix,
                            int max_ops, int64_t seed, int64_t index) {
  SplitMix64 rng{static_cast<uint64_t>(seed) * 0x100000001B3ULL ^
                 (static_cast<uint64_t>(index) + 0x5EED)};
  for (int i = 0; i < 4; ++i) rng.Next();
  auto drawable = [&](int n, double w) {
    const bool single = n == kTransformersMixKey;
    return n <= max_ops && w > 0 && !(single ? catalog.transformers : catalog.torch).empty();
  };
  double total = 0;
  for (auto [n, w] : mix) total += drawable(n, w) ? w : 0;
  int count = 1;
  double pick = rng.Uniform() * total;
  for (auto [n, w] : mix) {
    if (!drawable(n, w)) continue;
    count = n;
    if (pick < w) break;
    pick -= w;
  }
  const bool single = count == kTransformersMixKey;
  const std::vector<Json>& ops = single ? catalog.transformers : catalog.torch;
  count = std::min<int>(single ? 1 : count, static_cast<int>(ops.size()));
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<Json> chosen;
  for (int i = 0; i < count; ++i) {  // partial Fisher-Yates: distinct ops
    std::swap(order[i], order[i + rng.Below(order.size() - i)]);
    chosen.push_back(ops[order[i]]);
  }
  return chosen;
}

std::string ComposerPrompt(const std::vector<Json>& ops, Device device, double min_ms,
                           double max_ms) {
  std::ostringstream p;
  p << "Write a PyTorch program in KernelBench form that applies these " << ops.size()
    << " operation" << (ops.size() == 1 ? "" : "s")
    << " one after another, in this order, each to the "
    << "output of the previous one:\n\n";
  for (size_t i = 0; i < ops.size(); ++i) {
    const Json& op = ops[i];
    p << i + 1 << ". " << op.value("name", "") << " (" << op.value("kind", "op");
    if (op.contains("template") && op["template"].is_string())
      p << ", e.g. `" << op["template"].get<std::string>() << "`";
    if (op.contains("ranks") && op["ranks"].is_array() && !op["ranks"].empty()) {
      p << "; accepts inputs of rank " << Join(op["ranks"], ", ");
    }
    std::string imports = op.value("imports", "");
    for (size_t at; (at = imports.find('\n')) != std::string::npos;) imports.replace(at, 1, "`, `");
    if (!imports.empty()) p << "; imported with `" << imports << "`";
    p << ")\n";
  }
  p << "\nRequirements:\n"
    << "- `import torch`, `import torch.nn as nn`, `import torch.nn.functional as F` at the top, "
       "and the "
    << "imports named above.\n"
    << "- A class `Model(nn.Module)` whose `__init__` creates the layers (taking their sizes as "
       "arguments) "
    << "and whose `forward` applies the operations above in order and returns the result.\n"
    << "- Module-level size constants (e.g. `batch_size = 128`), a function `get_inputs()` "
       "returning a list "
    << "of input tensors made on the CPU with `torch.randn`, and a function `get_init_inputs()` "
       "returning "
    << "the list of arguments of `Model(...)`.\n"
    << "- Choose sizes so that one eager forward pass takes between " << FormatMs(min_ms) << " and "
    << FormatMs(max_ms) << " ms on "
    << (device == Device::kCuda ? "a modern data-center GPU" : "a CPU core") << ".\n"
    << "- The forward pass must be deterministic: no dropout, no random numbers, no in-place "
       "changes to "
    << "parameters; it must return a tensor with finite values that depends on the input.\n"
    << "- No comments, prints, tests or a `__main__` block.\n\n"
    << "Answer with the whole program in one ```python fenced block.";
  return p.str();
}

std::optional<std::string> ExtractPython(const std::string& answer) {
  size_t pos = 0;
  while ((pos = answer.find("```", pos)) != std::string::npos) {
    size_t eol = answer.find('\n', pos);
    if (eol == std::string::npos) return std::nullopt;
    std::string lang = answer.substr(pos + 3, eol - pos - 3);
    lang.erase(std::remove_if(lang.begin(), lang.end(),
                              [](char c) { return c == ' ' || c == '\t' || c == '\r'; }),
               lang.end());
    std::transform(lang.begin(), lang.end(), lang.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    size_t close = answer.find("\n```", eol);
    if (lang == "python" || lang == "py" || lang == "python3") {
      std::string code =
          close == std::string::npos ? std::string() : answer.substr(eol + 1, close - eol);
      if (code.find_first_not_of(" \t\r\n") == std::string::npos) return std::nullopt;
      return code;
    }
    if (close == std::string::npos) return std::nullopt;
    pos = close + 4;  // skip another language's block
  }
  return std::nullopt;
}

Result<Json> RunLlmComposer(const SynthOptions& opt, const fs::path& out, Json spec,
                            const std::map<int, double>& mix, int max_candidates,
                            const std::function<Result<Json>(const Json&)>& run_job) {
  const std::string model = opt.composer.substr(4);
  Result<std::unique_ptr<LlmClient>> client = MakeLlmClient(model, LlmOptions{});
  if (!client.ok()) {
    return Status(client.status().code() == StatusCode::kInvalidArgument
                      ? StatusCode::kInvalidArgument
                      : StatusCode::kFailedPrecondition,
                  "--composer " + opt.composer + ": " + client.status().message());
  }
  const fs::path rows_path = out / "llm_candidates.jsonl";
  spec["composer"] = opt.composer;
  spec["candidates_path"] = rows_path.string();
  Result<size_t> rows = CountRows(rows_path);
  if (!rows.ok()) return rows.status();

  Json catalog_spec = spec;  // checks the configuration and writes catalog.json
  catalog_spec["catalog_only"] = true;
  if (Result<Json> r = run_job(catalog_spec); !r.ok()) return r.status();
  Result<CatalogOps> ops = ComposableOps(out / "catalog.json");
  if (!ops.ok()) return ops.status();
  if (ops->torch.empty() && ops->transformers.empty())
    return Internal("the op catalog has no composable op");

  const double min_ms = spec.value("min_ms", 0.0), max_ms = spec.value("max_ms", 100.0);
  Json summary = Json::object();
  while (true) {
    if (rows.value() > 0) {
      Result<Json> r = run_job(spec);
      if (!r.ok()) return r.status();
      summary = r->value("summary", Json::object());
    }
    const int kept = summary.value("kept", 0);
    if (kept >= opt.count || static_cast<int>(rows.value()) >= max_candidates) return summary;
    if (summary.value("run", Json::object()).contains("stopped"))
      return summary;  // --time-limit: resume later
    const int want = std::min(opt.count - kept, max_candidates - static_cast<int>(rows.value()));
    for (int i = 0; i < want; ++i) {
      const int64_t index = static_cast<int64_t>(rows.value());
      std::vector<Json> chosen = SampleOps(ops.value(), mix, opt.max_ops, opt.seed, index);
      Json names = Json::array();
      for (const Json& op : chosen) names.push_back(op["name"]);
      ChatRequest request;
      ChatMessage message;
      message.role = "user";
      message.content = ComposerPrompt(chosen, opt.device, min_ms, max_ms);
      request.messages.push_back(message);
      Result<ChatResponse> reply = client.value()->Chat(request);
      if (!reply.ok()) {
        std::string message = "the model (" + client.value()->Describe() +
                              ") failed on candidate " + std::to_string(index) + ": " +
                              reply.status().message();
        if (i > 0) {  // filter what this run already wrote, so its decisions are kept
          if (Result<Json> r = run_job(spec); !r.ok()) return r.status();
        }
        return Internal(message + "; the candidates written so far are decided in " +
                        (out / "decisions.jsonl").string() +
                        "; run the same command again to resume");
      }
      Json row = {{"ops", names}, {"name", "llm-" + std::to_string(index)}};
      std::optional<std::string> code = ExtractPython(reply->message.content);
      if (code) {
        row["code"] = *code;
      } else {
        row["compose_error"] = "the model's answer holds no ```python block";
      }
      if (Status s = AppendRow(rows_path, row); !s.ok()) return s;
      rows = rows.value() + 1;
    }
  }
}

}  // namespace cuda_agent
