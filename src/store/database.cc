// database.cc — SQLite connection, statements and value binding.
#include "store/database.h"

#include <sqlite3.h>

#include <chrono>
#include <ctime>

namespace cuda_agent {
namespace {

constexpr int kBusyTimeoutMs = 10000;

struct StatementCloser {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementCloser>;

Status SqlError(sqlite3* db, const std::string& what) {
  return Internal(what + ": " + (db ? sqlite3_errmsg(db) : "no database"));
}

Result<Statement> Prepare(sqlite3* db, const std::string& sql,
                          const std::vector<SqlValue>& params) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
    return SqlError(db, "cannot prepare '" + sql + "'");
  }
  Statement stmt(raw);
  for (size_t i = 0; i < params.size(); ++i) {
    int at = static_cast<int>(i) + 1, rc = SQLITE_OK;
    const SqlValue& v = params[i];
    if (std::holds_alternative<std::nullptr_t>(v))
      rc = sqlite3_bind_null(raw, at);
    else if (auto* n = std::get_if<int64_t>(&v))
      rc = sqlite3_bind_int64(raw, at, *n);
    else if (auto* d = std::get_if<double>(&v))
      rc = sqlite3_bind_double(raw, at, *d);
    else {
      const std::string& s = std::get<std::string>(v);
      rc = sqlite3_bind_text(raw, at, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    }
    if (rc != SQLITE_OK) return SqlError(db, "cannot bind parameter " + std::to_string(at));
  }
  return stmt;
}

}  // namespace

std::string UtcNow() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void Database::Closer::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

Database::~Database() = default;

Result<Database> Database::Open(const fs::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  Database db(raw, path);
  if (rc != SQLITE_OK) return SqlError(raw, "cannot open the store " + path.string());
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  // Reading the journal mode also checks that the file is a database.
  Result<std::vector<Row>> mode = db.Query("PRAGMA journal_mode=WAL");
  if (!mode.ok()) {
    return FailedPrecondition(path.string() + " is not a usable SQLite database (" +
                              mode.status().message() + ")");
  }
  return db;
}

Status Database::Exec(const std::string& sql, const std::vector<SqlValue>& params) {
  Result<std::vector<Row>> rows = Query(sql, params);
  return rows.ok() ? Status() : rows.status();
}

Result<std::vector<Row>> Database::Query(const std::string& sql,
                                         const std::vector<SqlValue>& params) {
  Result<Statement> stmt = Prepare(db_.get(), sql, params);
  if (!stmt.ok()) return stmt.status();
  std::vector<Row> rows;
  for (;;) {
    int rc = sqlite3_step(stmt->get());
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return SqlError(db_.get(), "cannot run '" + sql + "'");
    Row row;
    int columns = sqlite3_column_count(stmt->get());
    for (int c = 0; c < columns; ++c) {
      switch (sqlite3_column_type(stmt->get(), c)) {
        case SQLITE_INTEGER:
          row.emplace_back(static_cast<int64_t>(sqlite3_column_int64(stmt->get(), c)));
          break;
        case SQLITE_FLOAT:
          row.emplace_back(sqlite3_column_double(stmt->get(), c));
          break;
        case SQLITE_NULL:
          row.emplace_back(nullptr);
          break;
        default: {
          const unsigned char* text = sqlite3_column_text(stmt->get(), c);
          row.emplace_back(std::string(text ? reinterpret_cast<const char*>(text) : ""));
        }
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace cuda_agent
