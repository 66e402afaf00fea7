// file_tools.cc — the tools that read and change workspace files directly (no sandbox needed: every
// path is resolved inside the workspace first): Read, Write, Edit, MultiEdit, Glob, Grep,
// TodoWrite.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "agent/tools.h"
#include "common/fs.h"

namespace cuda_agent {
namespace {

constexpr size_t kReadDefaultLimit = 2000;  // lines
constexpr size_t kReadMaxLineChars = 2000;
constexpr size_t kMaxFileBytes = 8 << 20;      // Read/Edit refuse larger files
constexpr size_t kGrepMaxFileBytes = 2 << 20;  // Grep skips larger files
constexpr size_t kGrepMaxMatches = 500;
constexpr size_t kGlobMaxResults = 500;

Json Schema(Json properties, std::vector<std::string> required) {
  return Json{
      {"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

std::string Relative(const ToolContext& context, const fs::path& path) {
  fs::path rel = path.lexically_relative(context.workspace.lexically_normal());
  return rel.empty() || rel == "." ? "." : rel.string();
}

// WritablePath resolves a path the agent wants to change: inside the workspace, not protected.
Result<fs::path> WritablePath(const ToolContext& context, const std::string& given) {
  Result<fs::path> path = ResolveWorkspacePath(context, given);
  if (!path.ok()) return path.status();
  fs::path rel = path->lexically_relative(context.workspace.lexically_normal());
  if (IsProtectedPath(rel)) {
    return InvalidArgument(
        rel.string() +
        " is a protected workspace file (model.py, binding.cpp, binding_registry.h, "
        "plain_binding.h, SKILL.md, utils/ and .cuda-agent/ cannot be changed); "
        "write your code in kernels/ and model_new.py");
  }
  std::error_code ec;
  if (fs::is_directory(path.value(), ec)) return InvalidArgument(rel.string() + " is a directory");
  return path;
}

// MatchOwner gives a file written by this process (perhaps as root) the workspace's owner, so that
// sandboxed commands (which may run as another uid) can change it too.
void MatchOwner(const ToolContext& context, const fs::path& path) {
  if (geteuid() != 0) return;
  struct stat root {};
  if (stat(context.workspace.c_str(), &root) != 0) return;
  fs::path rel = path.lexically_relative(context.workspace.lexically_normal());
  fs::path current = context.workspace;
  for (const auto& part : rel) {
    current /= part;
    (void)!lchown(current.c_str(), root.st_uid, root.st_gid);
  }
}

Status WriteWorkspaceFile(const ToolContext& context, const fs::path& path,
                          const std::string& content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return Internal("cannot create " + path.parent_path().string() + ": " + ec.message());
  if (Status s = WriteFileAtomic(path, content); !s.ok()) return s;
  MatchOwner(context, path);
  return OkStatus();
}

Result<std::string> ReadTextFile(const fs::path& path, const std::string& shown) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return NotFound("file does not exist: " + shown);
  if (fs::is_directory(path, ec))
    return InvalidArgument(shown + " is a directory (use Glob or Bash ls)");
  if (fs::file_size(path, ec) > kMaxFileBytes)
    return InvalidArgument(shown + " is larger than 8 MiB");
  return ReadFile(path);
}

// CountMatches counts non-overlapping occurrences.
size_t CountMatches(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++count;
  return count;
}

// ApplyEdit replaces old_string by new_string in `text` (once, unless replace_all).
Status ApplyEdit(std::string& text, const std::string& old_string, const std::string& new_string,
                 bool replace_all, const std::string& file) {
  if (old_string.empty())
    return InvalidArgument("old_string is empty (use Write to create a file)");
  if (old_string == new_string) return InvalidArgument("old_string and new_string are the same");
  size_t matches = CountMatches(text, old_string);
  if (matches == 0) return NotFound("old_string was not found in " + file);
  if (matches > 1 && !replace_all) {
    return InvalidArgument("old_string matches " + std::to_string(matches) + " times in " + file +
                           "; add surrounding lines to make it unique, or set replace_all to true");
  }
  std::string out;
  size_t from = 0;
  for (size_t at = text.find(old_string); at != std::string::npos;
       at = text.find(old_string, from)) {
    out.append(text, from, at - from);
    out += new_string;
    from = at + old_string.size();
    if (!replace_all) break;
  }
  out.append(text, from, std::string::npos);
  text = std::move(out);
  return OkStatus();
}

// GlobToRegex: `**` any folders, `*` and `?` within one name, {a,b} alternatives.
std::string GlobToRegex(const std::string& glob) {
  std::string re;
  int braces = 0;
  for (size_t i = 0; i < glob.size(); ++i) {
    char c = glob[i];
    if (c == '*' && i + 1 < glob.size() && glob[i + 1] == '*') {
      bool slash_after = i + 2 < glob.size() && glob[i + 2] == '/';
      re += slash_after ? "(?:.*/)?" : ".*";
      i += slash_after ? 2 : 1;
    } else if (c == '*') {
      re += "[^/]*";
    } else if (c == '?') {
      re += "[^/]";
    } else if (c == '{') {
      re += "(?:";
      ++braces;
    } else if (c == '}' && braces > 0) {
      re += ")";
      --braces;
    } else if (c == ',' && braces > 0) {
      re += "|";
    } else if (std::string("\\^$.|+()[]{}").find(c) != std::string::npos) {
      re += std::string("\\") + c;
    } else {
      re += c;
    }
  }
  while (braces-- > 0) re += ")";
  return re;
}

// FilesUnder lists regular files under `base` (relative to it), not following links to folders.
std::vector<fs::path> FilesUnder(const fs::path& base) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_regular_file(base, ec)) return {fs::path()};
  for (fs::recursive_directory_iterator it(base, fs::directory_options::skip_permission_denied, ec),
       end;
       it != end; it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file(ec) && !it->is_symlink(ec))
      files.push_back(it->path().lexically_relative(base));
  }
  std::sort(files.begin(), files.end());
  return files;
}

class ReadTool : public Tool {
 public:
  ToolSpec Spec() const override {
    return {
        "Read",
        "Read a file of the workspace. Lines are shown numbered (cat -n style), starting at "
        "`offset` "
        "(1-based line number, default 1), at most `limit` lines (default 2000); longer lines are "
        "cut.",
        Schema({{"file_path",
                 {{"type", "string"},
                  {"description", "path relative to the workspace, or absolute inside it"}}},
                {"offset", {{"type", "integer"}, {"description", "first line to show (1-based)"}}},
                {"limit", {{"type", "integer"}, {"description", "number of lines to show"}}}},
               {"file_path"})};
  }
  Observation Run(const Json& args, ToolContext& context) override {
    Result<fs::path> path = ResolveWorkspacePath(context, args["file_path"].get<std::string>());
    if (!path.ok()) return ErrorObservation("Error: " + path.status().message());
    std::string shown = Relative(context, path.value());
    Result<std::string> text = ReadTextFile(path.value(), shown);
    if (!text.ok()) return ErrorObservation("Error: " + text.status().message());
    if (text->find('\0') != std::string::npos)
      return ErrorObservation("Error: " + shown + " is a binary file");
    long offset = args.value("offset", 1L);
    long limit = args.value("limit", static_cast<long>(kReadDefaultLimit));
    if (offset < 1) return ErrorObservation("Error: offset must be at least 1");
    if (limit < 1) return ErrorObservation("Error: limit must be at least 1");
    if (text->empty()) return {"(" + shown + " is empty)", false};
    std::istringstream lines(text.value());
    std::string line, out;
    long number = 0, shown_lines = 0, total = 0;
    while (std::getline(lines, line)) {
      ++number;
      ++total;
      if (number < offset || shown_lines >= limit) continue;
      if (line.size() > kReadMaxLineChars) {
        line = line.substr(0, kReadMaxLineChars) +
               " [... line cut: " + std::to_string(line.size()) + " characters]";
      }
      char prefix[32];
      snprintf(prefix, sizeof prefix, "%6ld\t", number);
      out += prefix + line + "\n";
      ++shown_lines;
    }
    if (offset > total) {
      return ErrorObservation("Error: offset " + std::to_string(offset) + " is past the end of " +
                              shown + " (" + std::to_string(total) + " lines)");
    }
    if (offset + shown_lines - 1 < total) {
      out += "[" + shown + ": lines " + std::to_string(offset) + "-" +
             std::to_string(offset + shown_lines - 1) + " of " + std::to_string(total) +
             " shown; use offset/limit for more]\n";
    }
    return {out, false};
  }
};

class WriteTool : public Tool {
 public:
  ToolSpec Spec() const override {
    return {"Write", "Create or overwrite a file of the workspace with `content`.",
            Schema({{"file_path", {{"type", "string"}}}, {"content", {{"type", "string"}}}},
                   {"file_path", "content"})};
  }
  Observation Run(const Json& args, ToolContext& context) override {
    Result<fs::path> path = WritablePath(context, args["file_path"].get<std::string>());
    if (!path.ok()) return ErrorObservation("Error: " + path.status().message());
    const std::string& content = args["content"].get_ref<const std::string&>();
    std::error_code ec;
    bool existed = fs::exists(path.value(), ec);
    if (Status s = WriteWorkspaceFile(context, path.value(), content); !s.ok()) {
      return ErrorObservation("Error: " + s.message());
    }
    return {std::string(existed ? "Overwrote " : "Created ") + Relative(context, path.value()) +
                " (" + std::to_string(content.size()) + " bytes)",
            false};
  }
};

class EditTool : public Tool {
 public:
  ToolSpec Spec() const override {
    return {
        "Edit",
        "Replace `old_string` by `new_string` in a file. old_string must match exactly once unless "
        "replace_all is true.",
        Schema({{"file_path", {{"type", "string"}}},
                {"old_string", {{"type", "string"}}},
                {"new_string", {{"type", "string"}}},
                {"replace_all", {{"type", "boolean"}}}},
               {"file_path", "old_string", "new_string"})};
  }
  Observation Run(const Json& args, ToolContext& context) override {
    Result<fs::path> path = WritablePath(context, args["file_path"].get<std::string>());
    if (!path.ok()) return ErrorObservation("Error: " + path.status().message());
    std::string shown = Relative(context, path.value());
    Result<std::string> text = ReadTextFile(path.value(), shown);
    if (!text.ok()) return ErrorObservation("Error: " + text.status().message());
    std::string edited = text.value();
    bool replace_all = args.value("replace_all", false);
    size_t matches = CountMatches(edited, args["old_string"].get<std::string>());
    Status s = ApplyEdit(edited, args["old_string"].get<std::string>(),
                         args["new_string"].get<std::string>(), replace_all, shown);
    if (!s.ok()) return ErrorObservation("Error: " + s.message());
    if (Status w = WriteWorkspaceFile(context, path.value(), edited); !w.ok())
      return ErrorObservation("Error: " + w.message());
    return {"Edited " + shown + " (" + std::to_string(replace_all ? matches : 1) + " replacement" +
                ((replace_all ? matches : 1) == 1 ? "" : "s") + ")",
            false};
  }
};

class MultiEditTool : public Tool {
 public:
  ToolSpec Spec() const override {
    Json edit = Schema({{"old_string", {{"type", "string"}}},
                        {"new_string", {{"type", "string"}}},
                        {"replace_all", {{"type", "boolean"}}}},
                       {"old_string", "new_string"});
    return {"MultiEdit",
            "Apply several edits to one file, in order, each as Edit would. All or nothing: if one "
            "edit fails, the file is left unchanged.",
            Schema({{"file_path", {{"type", "string"}}},
                    {"edits", {{"type", "array"}, {"items", edit}}}},
                   {"file_path", "edits"})};
  }
  Observation Run(const Json& args, ToolContext& context) override {
    Result<fs::path> path = WritablePath(context, args["file_path"].get<std::string>());
    if (!path.ok()) return ErrorObservation("Error: " + path.status().message());
    std::string shown = Relative(context, path.value());
    const Json& edits = args["edits"];
    if (edits.empty()) return ErrorObservation("Error: edits is empty");
    Result<std::string> text = ReadTextFile(path.value(), shown);
    if (!text.ok()) return ErrorObservation("Error: " + text.status().message());
    std::string edited = text.value();
    for (size_t i = 0; i < edits.size(); ++i) {
      Status s = ApplyEdit(edited, edits[i]["old_string"].get<std::string>(),
                           edits[i]["new_string"].get<std::string>(),
                           edits[i].value("replace_all", false), shown);
      if (!s.ok()) {
        return ErrorObservation("Error: edit " + std::to_string(i + 1) + " of " +
                                std::to_string(edits.size()) + ": " + s.message() +
                                " (no edit was applied)");
      }
    }
    if (Status w = WriteWorkspaceFile(context, path.value(), edited); !w.ok())
      return ErrorObservation("Error: " + w.message());
    return {"Applied " + std::to_string(edits.size()) + " edits to " + shown, false};
  }
};

class GlobTool : public Tool {
 public:
  ToolSpec Spec() const override {
    return {
        "Glob",
        "List the workspace files matching a glob pattern (`*`, `?`, `**` for any folders, {a,b}), "
        "relative to `path` (default: the workspace root).",
        Schema({{"pattern", {{"type", "string"}}}, {"path", {{"type", "string"}}}}, {"pattern"})};
  }
  Observation Run(const Json& args, ToolContext& context) override {
    Result<fs::path> base = ResolveWorkspacePath(context, args.value("path", "."));
    if (!base.ok()) return ErrorObservation("Error: " + base.status().message());
    std::error_code ec;
    if (!fs::is_directory(base.value(), ec))
      return ErrorObservation("Error: " + Relative(context, base.value()) + " is not a directory");
    std::regex re;
    try {
      re = std::regex(GlobToRegex(args["pattern"].get<std::string>()));
    } catch (const std::regex_error& e) {
      return ErrorObservation(std::string("Error: bad pattern: ") + e.what());
    }
    std::string out;
    size_t count = 0;
    for (const fs::path& file : FilesUnder(base.value())) {
      if (!std::regex_match(file.generic_string(), re)) continue;
      if (++count <= kGlobMaxResults) out += Relative(context, base.value() / file) + "\n";
    }
    if (count == 0) return {"No files match " + args["pattern"].get<std::string>(), false};
    if (count > kGlobMaxResults)
      out += "[" + std::to_string(count - kGlobMaxResults) + " more files not listed]\n";
    return {out, false};
  }
};

class GrepTool : public Tool {
 public:
  ToolSpec Spec() const override {
    return {
        "Grep",
        "Search file contents with a regular expression (ECMAScript syntax) under `path` (a file "
        "or folder, default the workspace), optionally only in files whose name matches `glob`. "
        "Prints file:line: text.",
        Schema({{"pattern", {{"type", "string"}}},
                {"path", {{"type", "string"}}},
                {"glob", {{"type", "string"}}}},
               {"pattern"})};
  }
  Observation Run(const Json& args, ToolContext& context) override {
    Result<fs::path> base = ResolveWorkspacePath(context, args.value("path", "."));
    if (!base.ok()) return ErrorObservation("Error: " + base.status().message());
    std::error_code ec;
    if (!fs::exists(base.value(), ec))
      return ErrorObservation("Error: " + Relative(context, base.value()) + " does not exist");
    std::regex re, name_re;
    try {
      re = std::regex(args["pattern"].get<std::string>());
      if (args.contains("glob")) name_re = std::regex(GlobToRegex(args["glob"].get<std::string>()));
    } catch (const std::regex_error& e) {
      return ErrorObservation(std::string("Error: bad pattern: ") + e.what());
    }
    std::string out;
    size_t matches = 0;
    for (const fs::path& file : FilesUnder(base.value())) {
      fs::path full = file.empty() ? base.value() : base.value() / file;
      if (args.contains("glob")) {
        // A glob with a folder part matches the path; without, the file name.
        std::string glob = args["glob"].get<std::string>();
        std::string subject =
            glob.find('/') == std::string::npos ? full.filename().string() : file.generic_string();
        if (!std::regex_match(subject, name_re)) continue;
      }
      if (fs::file_size(full, ec) > kGrepMaxFileBytes) continue;
      Result<std::string> text = ReadFile(full);
      if (!text.ok() || text->find('\0') != std::string::npos) continue;
      std::istringstream lines(text.value());
      std::string line;
      long number = 0;
      while (std::getline(lines, line)) {
        ++number;
        if (!std::regex_search(line, re)) continue;
        if (++matches <= kGrepMaxMatches) {
          if (line.size() > 500) line = line.substr(0, 500) + " [...]";
          out += Relative(context, full) + ":" + std::to_string(number) + ": " + line + "\n";
        }
      }
    }
    if (matches == 0) return {"No matches for " + args["pattern"].get<std::string>(), false};
    if (matches > kGrepMaxMatches)
      out += "[" + std::to_string(matches - kGrepMaxMatches) + " more matches not shown]\n";
    return {out, false};
  }
};

class TodoWriteTool : public Tool {
 public:
  ToolSpec Spec() const override {
    Json todo =
        Schema({{"content", {{"type", "string"}}},
                {"status", {{"type", "string"}, {"enum", {"pending", "in_progress", "completed"}}}},
                {"id", {{"type", "string"}}}},
               {"content", "status"});
    return {"TodoWrite",
            "Replace your todo list (a plan you keep for yourself; it changes no file).",
            Schema({{"todos", {{"type", "array"}, {"items", todo}}}}, {"todos"})};
  }
  Observation Run(const Json& args, ToolContext& context) override {
    context.todos = args["todos"];
    std::string out = "Todo list updated (" + std::to_string(context.todos.size()) + " items):\n";
    for (const auto& todo : context.todos) {
      std::string status = todo["status"].get<std::string>();
      std::string mark = status == "completed" ? "[x]" : status == "in_progress" ? "[~]" : "[ ]";
      out += mark + " " + todo["content"].get<std::string>() + "\n";
    }
    return {out, false};
  }
};

}  // namespace

std::unique_ptr<Tool> MakeReadTool() { return std::make_unique<ReadTool>(); }
std::unique_ptr<Tool> MakeWriteTool() { return std::make_unique<WriteTool>(); }
std::unique_ptr<Tool> MakeEditTool() { return std::make_unique<EditTool>(); }
std::unique_ptr<Tool> MakeMultiEditTool() { return std::make_unique<MultiEditTool>(); }
std::unique_ptr<Tool> MakeGlobTool() { return std::make_unique<GlobTool>(); }
std::unique_ptr<Tool> MakeGrepTool() { return std::make_unique<GrepTool>(); }
std::unique_ptr<Tool> MakeTodoWriteTool() { return std::make_unique<TodoWriteTool>(); }

}  // namespace cuda_agent
