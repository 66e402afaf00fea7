// tools.cc — the tool registry: argument parsing and schema checks, workspace path resolution, the
// protected-file rule and the output cap shared by every tool.
#include "agent/tools.h"

#include "workspace/layout.h"

namespace cuda_agent {

void ToolRegistry::Add(std::unique_ptr<Tool> tool) { tools_.push_back(std::move(tool)); }

std::vector<ToolSpec> ToolRegistry::Specs() const {
  std::vector<ToolSpec> specs;
  for (const auto& tool : tools_) specs.push_back(tool->Spec());
  return specs;
}

Observation ToolRegistry::Call(const std::string& name, const std::string& arguments_text,
                               ToolContext& context) const {
  for (const auto& tool : tools_) {
    ToolSpec spec = tool->Spec();
    if (spec.name != name) continue;
    Json arguments;
    if (arguments_text.find_first_not_of(" \t\r\n") == std::string::npos) {
      arguments = Json::object();  // some providers send "" for a call without arguments
    } else {
      Result<Json> parsed = ParseJson(arguments_text, name + " arguments");
      if (!parsed.ok()) {
        return ErrorObservation("Error: the arguments of " + name + " are not valid JSON (" +
                                parsed.status().message() + ")");
      }
      arguments = std::move(parsed).value();
    }
    if (Status s = ValidateArguments(spec.parameters, arguments); !s.ok()) {
      return ErrorObservation("Error: invalid arguments for " + name + ": " + s.message());
    }
    Observation out = tool->Run(arguments, context);
    out.text = ValidUtf8(CapOutput(out.text, context.output_cap_chars));
    return out;
  }
  std::string known;
  for (const auto& tool : tools_) known += (known.empty() ? "" : ", ") + tool->Spec().name;
  return ErrorObservation("Error: unknown tool '" + name + "'. Available tools: " + known);
}

ToolRegistry DefaultToolRegistry() {
  ToolRegistry registry;
  registry.Add(MakeBashTool());
  registry.Add(MakeBashOutputTool());
  registry.Add(MakeKillBashTool());
  registry.Add(MakeReadTool());
  registry.Add(MakeWriteTool());
  registry.Add(MakeEditTool());
  registry.Add(MakeMultiEditTool());
  registry.Add(MakeGlobTool());
  registry.Add(MakeGrepTool());
  registry.Add(MakeTodoWriteTool());
  return registry;
}

namespace {

bool HasType(const Json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "integer") {
    return value.is_number_integer() ||
           (value.is_number_float() &&
            value.get<double>() ==
                static_cast<double>(static_cast<long long>(value.get<double>())));
  }
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "array") return value.is_array();
  if (type == "object") return value.is_object();
  return true;
}

bool IsUnder(const fs::path& path, const fs::path& root) {
  fs::path rel = path.lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

Status ValidateArguments(const Json& schema, const Json& arguments, const std::string& where) {
  const std::string here = where.empty() ? "arguments" : where;
  std::string type = schema.value("type", "object");
  if (!HasType(arguments, type)) return InvalidArgument(here + " must be of type " + type);
  if (type == "array" && schema.contains("items")) {
    for (size_t i = 0; i < arguments.size(); ++i) {
      Status s =
          ValidateArguments(schema["items"], arguments[i], here + "[" + std::to_string(i) + "]");
      if (!s.ok()) return s;
    }
  }
  if (schema.contains("enum") && !schema["enum"].empty()) {
    bool found = false;
    for (const auto& allowed : schema["enum"]) found = found || allowed == arguments;
    if (!found) return InvalidArgument(here + " must be one of " + schema["enum"].dump());
  }
  if (type != "object") return OkStatus();
  const Json properties = schema.value("properties", Json::object());
  for (const auto& name : schema.value("required", Json::array())) {
    if (!arguments.contains(name.get<std::string>())) {
      return InvalidArgument("missing required argument '" + name.get<std::string>() + "'" +
                             (where.empty() ? "" : " in " + where));
    }
  }
  for (const auto& [key, value] : arguments.items()) {
    if (!properties.contains(key)) {
      return InvalidArgument("unknown argument '" + key + "'" +
                             (where.empty() ? "" : " in " + where));
    }
    Status s = ValidateArguments(properties[key], value, where.empty() ? key : where + "." + key);
    if (!s.ok()) return s;
  }
  return OkStatus();
}

Result<fs::path> ResolveWorkspacePath(const ToolContext& context, const std::string& path) {
  if (path.empty()) return InvalidArgument("empty path");
  const fs::path root = context.workspace.lexically_normal();
  fs::path given(path);
  fs::path joined = (given.is_absolute() ? given : root / given).lexically_normal();
  if (joined != root && !IsUnder(joined, root)) {
    return InvalidArgument("path '" + path + "' is outside the workspace " + root.string());
  }
  // Symbolic links are followed for the part of the path that exists: the target must stay inside.
  std::error_code ec;
  fs::path real_root = fs::weakly_canonical(root, ec);
  if (ec) return Internal("workspace " + root.string() + ": " + ec.message());
  fs::path real = fs::weakly_canonical(joined, ec);
  if (ec) return InvalidArgument("path '" + path + "': " + ec.message());
  if (real != real_root && !IsUnder(real, real_root)) {
    return InvalidArgument("path '" + path +
                           "' leads outside the workspace (through a symbolic link)");
  }
  return joined;
}

bool IsProtectedPath(const fs::path& relative) {
  fs::path rel = relative.lexically_normal();
  if (rel.empty()) return false;
  std::string first = rel.begin()->string();
  if (first == "utils" || first == ".cuda-agent") return true;
  if (std::distance(rel.begin(), rel.end()) != 1) return false;
  for (const char* fixed : kInfrastructureFiles) {
    if (first == fixed) return true;
  }
  return first == "model.py" || first == "SKILL.md";
}

std::string ValidUtf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t length = c < 0x80           ? 1
                    : (c >> 5) == 0x6  ? 2
                    : (c >> 4) == 0xE  ? 3
                    : (c >> 3) == 0x1E ? 4
                                       : 0;
    bool valid = length > 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) {
      valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    }
    if (valid && length > 1) {  // overlong forms, surrogates, beyond U+10FFFF
      unsigned char next = static_cast<unsigned char>(text[i + 1]);
      if ((length == 2 && c < 0xC2) || (c == 0xE0 && next < 0xA0) || (c == 0xED && next >= 0xA0) ||
          (c == 0xF0 && next < 0x90) || c > 0xF4 || (c == 0xF4 && next >= 0x90)) {
        valid = false;
      }
    }
    if (valid) {
      out.append(text, i, length);
      i += length;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string CapOutput(const std::string& text, size_t cap_chars) {
  if (cap_chars == 0 || text.size() <= cap_chars) return text;
  size_t head = cap_chars / 2;
  size_t tail = cap_chars - head;
  // Cut on line boundaries where one is near, so numbered lines are not split.
  size_t head_end = text.rfind('\n', head);
  if (head_end == std::string::npos || head_end < head / 2) head_end = head;
  size_t tail_begin = text.find('\n', text.size() - tail);
  if (tail_begin == std::string::npos || tail_begin > text.size() - tail / 2)
    tail_begin = text.size() - tail;
  size_t cut = tail_begin - head_end;
  return text.substr(0, head_end) + "\n[... output truncated: " + std::to_string(cut) + " of " +
         std::to_string(text.size()) + " characters omitted; head and tail shown ...]\n" +
         text.substr(tail_begin);
}

}  // namespace cuda_agent
