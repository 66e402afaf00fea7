// fs.h — small filesystem helpers with Status results: read/write whole files (writes are atomic),
// temporary directories, copying candidate trees, hard links, listing files, a file's stamp for
// cache keys.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/status.h"

namespace cuda_agent {

namespace fs = std::filesystem;

Result<std::string> ReadFile(const fs::path& path);
// WriteFileAtomic writes to a sibling temporary file and renames it over `path`.
Status WriteFileAtomic(const fs::path& path, const std::string& content);
// MakeTempDir creates a fresh directory named `prefix-XXXXXX` under `parent`.
Result<fs::path> MakeTempDir(const fs::path& parent, const std::string& prefix);
// ListFilesRecursive returns regular files under `root`, relative to it, sorted.
std::vector<fs::path> ListFilesRecursive(const fs::path& root);
// CopyFiles copies the given relative files from `from` to `to`, creating directories.
Status CopyFiles(const fs::path& from, const fs::path& to, const std::vector<fs::path>& files);
// LinkOrCopy puts `from` (a file or a folder tree) at `to`: hard links where the file system
// allows, copies where it does not.
Status LinkOrCopy(const fs::path& from, const fs::path& to);
// FileStamp: "SIZE:SECONDS.NANOSECONDS" (size and modification time) of the file `path` resolves
// to, for keys that must change when a file is replaced; "" when it cannot be read.
std::string FileStamp(const fs::path& path);
// DefaultCacheDir is $CUDA_AGENT_CACHE_DIR, else $XDG_CACHE_HOME/cuda-agent, else
// ~/.cache/cuda-agent.
fs::path DefaultCacheDir();

}  // namespace cuda_agent
