// options.cc — the option parser.
#include "cli/options.h"

#include <cstdlib>
#include <sstream>

namespace cuda_agent {

std::string EnvName(const std::string& flag) {
  std::string name = "CUDA_AGENT_";
  for (char c : flag)
    name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

bool AsksForHelp(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

std::string ParsedArgs::Get(const std::string& name) const {
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  if (auto it = defaults_.find(name); it != defaults_.end()) return it->second;
  return "";
}

Result<ParsedArgs> ParseArgs(const std::vector<OptionSpec>& specs,
                             const std::vector<std::string>& args) {
  ParsedArgs parsed;
  auto find = [&](const std::string& name) -> const OptionSpec* {
    for (const auto& s : specs) {
      if (s.name == name) return &s;
    }
    return nullptr;
  };
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_done || a.size() < 2 || a.rfind("--", 0) != 0) {
      if (a == "--") {
        options_done = true;
        continue;
      }
      if (!options_done && a.size() > 1 && a[0] == '-' && a != "-") {
        return InvalidArgument("unknown option '" + a + "' (options are spelled --name)");
      }
      parsed.positional_.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    std::string name = a.substr(2);
    std::string value;
    bool has_inline = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline = true;
    }
    const OptionSpec* spec = find(name);
    if (spec == nullptr) return InvalidArgument("unknown option --" + name);
    if (spec->takes_value) {
      if (!has_inline) {
        if (i + 1 >= args.size()) return InvalidArgument("option --" + name + " needs a value");
        value = args[++i];
      }
    } else {
      if (has_inline) return InvalidArgument("option --" + name + " takes no value");
      value = "1";
    }
    parsed.values_[name] = value;
  }
  for (const auto& s : specs) {
    if (parsed.values_.count(s.name)) continue;
    if (const char* env = std::getenv(EnvName(s.name).c_str()); env && *env) {
      parsed.values_[s.name] = s.takes_value ? env : (std::string(env) == "0" ? "" : "1");
      if (parsed.values_[s.name].empty()) parsed.values_.erase(s.name);
    } else if (!s.default_value.empty()) {
      parsed.defaults_[s.name] = s.default_value;
    }
  }
  return parsed;
}

std::string FormatHelp(const std::vector<OptionSpec>& specs) {
  std::ostringstream s;
  for (const auto& spec : specs) {
    std::string left = "  --" + spec.name + (spec.takes_value ? " VALUE" : "");
    s << left;
    for (size_t i = left.size(); i < 30; ++i) s << ' ';
    s << spec.help;
    if (!spec.default_value.empty()) s << " (default: " << spec.default_value << ")";
    s << "  [" << EnvName(spec.name) << "]\n";
  }
  return s.str();
}

Result<int> ParseIntFlag(const ParsedArgs& args, const std::string& name) {
  std::string v = args.Get(name);
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 0 || n > 1000000) {
    return InvalidArgument("--" + name + " expects a non-negative integer, got '" + v + "'");
  }
  return static_cast<int>(n);
}

Result<double> ParseDoubleFlag(const ParsedArgs& args, const std::string& name, bool allow_zero) {
  std::string v = args.Get(name);
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(d > 0 || (allow_zero && d == 0))) {
    return InvalidArgument("--" + name + " expects a " +
                           (allow_zero ? "non-negative" : "positive") + " number, got '" + v + "'");
  }
  return d;
}

}  // namespace cuda_agent
