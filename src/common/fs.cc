// fs.cc — filesystem helpers.
#include "common/fs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "common/host_environment.h"

namespace cuda_agent {

Result<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path.string());
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

Status WriteFileAtomic(const fs::path& path, const std::string& content) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Internal("cannot write " + tmp.string());
    out << content;
    if (!out.flush()) return Internal("short write to " + tmp.string());
  }
  fs::rename(tmp, path, ec);
  if (ec) return Internal("cannot rename " + tmp.string() + ": " + ec.message());
  return OkStatus();
}

Result<fs::path> MakeTempDir(const fs::path& parent, const std::string& prefix) {
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return Internal("cannot create " + parent.string() + ": " + ec.message());
  std::string templ = (parent / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr)
    return Internal("mkdtemp failed under " + parent.string());
  return fs::path(templ);
}

std::vector<fs::path> ListFilesRecursive(const fs::path& root) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return files;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec)) files.push_back(fs::relative(it->path(), root, ec));
  }
  std::sort(files.begin(), files.end());
  return files;
}

Status CopyFiles(const fs::path& from, const fs::path& to, const std::vector<fs::path>& files) {
  std::error_code ec;
  for (const auto& rel : files) {
    fs::path dst = to / rel;
    fs::create_directories(dst.parent_path(), ec);
    fs::copy_file(from / rel, dst, fs::copy_options::overwrite_existing, ec);
    if (ec) return Internal("cannot copy " + (from / rel).string() + ": " + ec.message());
  }
  return OkStatus();
}

Status LinkOrCopy(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  auto options = fs::copy_options::recursive | fs::copy_options::create_hard_links;
  fs::copy(from, to, options, ec);
  if (!ec) return OkStatus();
  fs::remove_all(to, ec);
  fs::copy(from, to, fs::copy_options::recursive, ec);
  if (ec)
    return Internal("cannot put " + from.string() + " at " + to.string() + ": " + ec.message());
  return OkStatus();
}

std::string FileStamp(const fs::path& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "";  // stat follows links: the file they resolve to
  return std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

fs::path DefaultCacheDir() {
  if (const std::string& dir = HostValue(HostVar::kCacheDir); !dir.empty()) return dir;
  if (const std::string& xdg = HostValue(HostVar::kXdgCacheHome); !xdg.empty()) {
    return fs::path(xdg) / "cuda-agent";
  }
  if (const std::string& home = HostValue(HostVar::kHome); !home.empty()) {
    return fs::path(home) / ".cache" / "cuda-agent";
  }
  return fs::temp_directory_path() / "cuda-agent-cache";
}

}  // namespace cuda_agent
