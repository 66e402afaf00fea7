// database.h — a small SQLite wrapper for the store: one connection in WAL mode with a busy timeout
// (several judge processes may share the file), statements with bound text/real/integer values.
//
//   Result<Database> db = Database::Open(cache / "store.sqlite");
//   db->Exec("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v TEXT)");
//   Result<std::vector<Row>> rows = db->Query("SELECT v FROM t WHERE k = ?", {"key"});
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "common/fs.h"
#include "common/status.h"

struct sqlite3;

namespace cuda_agent {

using SqlValue = std::variant<std::nullptr_t, int64_t, double, std::string>;
using Row = std::vector<SqlValue>;

class Database {
 public:
  // Open creates the file (and its folder) when missing; a file that is not a database is an error.
  static Result<Database> Open(const fs::path& path);

  Database(Database&&) noexcept = default;
  Database& operator=(Database&&) noexcept = default;
  ~Database();

  Status Exec(const std::string& sql, const std::vector<SqlValue>& params = {});
  Result<std::vector<Row>> Query(const std::string& sql, const std::vector<SqlValue>& params = {});
  const fs::path& path() const { return path_; }

 private:
  Database(sqlite3* db, fs::path path) : db_(db), path_(std::move(path)) {}
  struct Closer {
    void operator()(sqlite3* db) const;
  };
  std::unique_ptr<sqlite3, Closer> db_;
  fs::path path_;
};

// UtcNow is the current time as ISO 8601 UTC ("2026-01-31T12:00:00Z"), the store's timestamps.
std::string UtcNow();

}  // namespace cuda_agent
