// nvcc_plan.cc — reading nvcc's dryrun into two chains and a host compile.
#include "builder/nvcc_plan.h"

#include <algorithm>
#include <cctype>

#include "common/hash.h"

namespace cuda_agent {
namespace {

constexpr const char* kDryrunPrefix = "#$ ";

bool IsNameChar(char c, bool first) {
  return c == '_' || std::isalpha(static_cast<unsigned char>(c)) ||
         (!first && std::isdigit(static_cast<unsigned char>(c)));
}

// An assignment line: NAME=VALUE with NAME an identifier at the line's start.
bool SplitAssignment(const std::string& line, std::string* name, std::string* value) {
  size_t i = 0;
  while (i < line.size() && IsNameChar(line[i], i == 0)) ++i;
  if (i == 0 || i >= line.size() || line[i] != '=') return false;
  *name = line.substr(0, i);
  std::string rest = line.substr(i + 1);
  size_t end = rest.find_last_not_of(' ');
  *value = end == std::string::npos ? "" : rest.substr(0, end + 1);
  return true;
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool Has(const CommandLine& argv, const std::string& word) {
  return std::find(argv.begin(), argv.end(), word) != argv.end();
}

// The word after `flag`, or "" when there is none.
std::string ValueOf(const CommandLine& argv, const std::string& flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

}  // namespace

Result<CommandLine> SplitCommandLine(const std::string& line,
                                     const std::map<std::string, std::string>& vars) {
  CommandLine words;
  std::string word;
  bool in_word = false;
  enum class Quote { kNone, kSingle, kDouble } quote = Quote::kNone;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote == Quote::kSingle) {
      if (c == '\'') {
        quote = Quote::kNone;
      } else {
        word += c;
      }
      continue;
    }
    if (c == '\\' && i + 1 < line.size()) {
      char next = line[i + 1];
      // Inside double quotes a backslash escapes only these; elsewhere anything.
      if (quote == Quote::kNone || next == '"' || next == '\\' || next == '$' || next == '`') {
        word += next;
        ++i;
        in_word = true;
        continue;
      }
    }
    if (c == '`' || (c == '$' && i + 1 < line.size() && line[i + 1] == '(')) {
      return InvalidArgument("command substitution in a dryrun line: " + line);
    }
    if (c == '$') {
      size_t start = i + 1;
      bool braced = start < line.size() && line[start] == '{';
      if (braced) ++start;
      size_t end = start;
      while (end < line.size() && IsNameChar(line[end], end == start)) ++end;
      if (end == start || (braced && (end >= line.size() || line[end] != '}'))) {
        return InvalidArgument("a '$' that names no variable in a dryrun line: " + line);
      }
      auto it = vars.find(line.substr(start, end - start));
      if (it == vars.end()) {
        return InvalidArgument("variable " + line.substr(start, end - start) +
                               " is not set by the dryrun: " + line);
      }
      word += it->second;
      in_word = true;
      i = braced ? end : end - 1;
      continue;
    }
    if (quote == Quote::kDouble) {
      if (c == '"') {
        quote = Quote::kNone;
      } else {
        word += c;
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c == '"' ? Quote::kDouble : Quote::kSingle;
      in_word = true;
      continue;
    }
    if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
      continue;
    }
    if (c == ';' || c == '|' || c == '&' || c == '<' || c == '>') {
      return InvalidArgument(std::string("shell operator '") + c + "' in a dryrun line: " + line);
    }
    word += c;
    in_word = true;
  }
  if (quote != Quote::kNone) return InvalidArgument("unterminated quote in a dryrun line: " + line);
  if (in_word) words.push_back(word);
  return words;
}

Result<NvccPlan> PlanNvcc(const std::string& dryrun_output) {
  NvccPlan plan;
  std::map<std::string, std::string> vars;
  std::vector<CommandLine> commands;
  size_t pos = 0;
  while (pos < dryrun_output.size()) {
    size_t end = dryrun_output.find('\n', pos);
    if (end == std::string::npos) end = dryrun_output.size();
    std::string line = dryrun_output.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind(kDryrunPrefix, 0) != 0) continue;
    line = line.substr(3);
    std::string name, value;
    if (SplitAssignment(line, &name, &value)) {
      vars[name] = value;
      plan.env.push_back(name + "=" + value);
      continue;
    }
    Result<CommandLine> argv = SplitCommandLine(line, vars);
    if (!argv.ok()) return argv.status();
    if (argv->empty()) continue;
    if (Basename(argv->front()) == "rm") continue;  // nvcc's clean-up of its temporary files
    commands.push_back(std::move(argv.value()));
  }
  if (commands.size() < 4) {
    return InvalidArgument("the dryrun lists " + std::to_string(commands.size()) +
                           " commands; expected at least 4");
  }
  auto front_end = std::find_if(commands.begin(), commands.end(), [](const CommandLine& argv) {
    return Basename(argv.front()) == "cudafe++";
  });
  if (front_end == commands.end()) return InvalidArgument("the dryrun runs no cudafe++");
  CommandLine& cudafe = *front_end;
  if (!Has(cudafe, "--gen_module_id_file")) {
    return InvalidArgument("cudafe++ does not generate the module id");
  }
  std::string id_file = ValueOf(cudafe, "--module_id_file_name");
  if (id_file.empty()) return InvalidArgument("cudafe++ names no module id file");
  cudafe.erase(std::find(cudafe.begin(), cudafe.end(), "--gen_module_id_file"));
  for (auto it = commands.begin(); it != front_end; ++it) {
    if (!Has(*it, "-E")) {
      return InvalidArgument("a command before cudafe++ is not preprocessing: " + it->front());
    }
  }
  plan.host_chain.assign(commands.begin(), front_end + 1);
  plan.device_chain.assign(front_end + 1, commands.end() - 1);
  plan.host_compile = commands.back();
  if (!Has(plan.host_compile, "-c")) {
    return InvalidArgument("the dryrun's last command does not compile (-c): " +
                           plan.host_compile.front());
  }
  bool reads_id = false;
  for (const CommandLine& argv : plan.device_chain) {
    if (Basename(argv.front()) == "cudafe++")
      return InvalidArgument("the dryrun runs cudafe++ twice");
    if (Basename(argv.front()) != "cicc") continue;
    if (ValueOf(argv, "--module_id_file_name") != id_file) {
      return InvalidArgument("cicc reads another module id than cudafe++ writes");
    }
    reads_id = true;
  }
  if (!reads_id) return InvalidArgument("no cicc after cudafe++ reads its module id");
  plan.module_id_file = id_file;
  return plan;
}

std::string ShellScript(const std::vector<CommandLine>& commands) {
  std::string script;
  for (const CommandLine& argv : commands) {
    if (!script.empty()) script += " && ";
    for (size_t i = 0; i < argv.size(); ++i) {
      if (i > 0) script += ' ';
      script += '\'';
      for (char c : argv[i]) script += c == '\'' ? std::string("'\\''") : std::string(1, c);
      script += '\'';
    }
  }
  return script;
}

std::string NvccModuleId(const std::string& name, const std::string& key) {
  std::string clean;
  for (char c : name) clean += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return "_" + Sha256Hex(key).substr(0, 8) + "_" + std::to_string(clean.size()) + "_" + clean +
         "_" + Sha256Hex(name).substr(0, 8);
}

}  // namespace cuda_agent
