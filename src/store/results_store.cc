// results_store.cc — the "bench" schema (bench_runs, bench_results) and its statements.
#include "store/results_store.h"

#include "common/hash.h"

namespace cuda_agent {

const std::vector<Migration>& ResultsStore::Migrations() {
  static const std::vector<Migration> steps = {
      {1,
       "bench_runs and bench_results (the tables of before versions: kept as they are)",
       {"CREATE TABLE IF NOT EXISTS bench_runs (run_id TEXT PRIMARY KEY, description TEXT NOT "
        "NULL, created_at TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS bench_results (run_id TEXT NOT NULL, task_id TEXT NOT NULL, "
        "record TEXT NOT NULL, finished_at TEXT NOT NULL, PRIMARY KEY (run_id, task_id))"}},
  };
  return steps;
}

Result<ResultsStore> ResultsStore::Open(const fs::path& path) {
  Result<Database> db = Database::Open(path);
  if (!db.ok()) return db.status();
  if (Status s = Migrate(db.value(), kSchema, Migrations()); !s.ok()) return s;
  return ResultsStore(std::move(db).value());
}

Status ResultsStore::BeginRun(const std::string& run_id, const Json& description) {
  std::lock_guard<std::mutex> lock(*mutex_);
  return db_.Exec(
      "INSERT OR IGNORE INTO bench_runs (run_id, description, created_at) VALUES (?, ?, ?)",
      {run_id, description.dump(), UtcNow()});
}

std::optional<Json> ResultsStore::RunDescription(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(*mutex_);
  Result<std::vector<Row>> rows =
      db_.Query("SELECT description FROM bench_runs WHERE run_id = ?", {run_id});
  if (!rows.ok() || rows->empty()) return std::nullopt;
  const auto* text = std::get_if<std::string>(&rows->front()[0]);
  if (!text) return std::nullopt;
  Json j = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

Status ResultsStore::Put(const std::string& run_id, const std::string& task_id,
                         const Json& record) {
  std::lock_guard<std::mutex> lock(*mutex_);
  return db_.Exec(
      "INSERT OR REPLACE INTO bench_results (run_id, task_id, record, finished_at) VALUES (?, ?, "
      "?, ?)",
      {run_id, task_id, record.dump(), UtcNow()});
}

Result<std::map<std::string, Json>> ResultsStore::Records(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(*mutex_);
  Result<std::vector<Row>> rows =
      db_.Query("SELECT task_id, record FROM bench_results WHERE run_id = ?", {run_id});
  if (!rows.ok()) return rows.status();
  std::map<std::string, Json> records;
  for (const Row& row : rows.value()) {
    const auto* id = std::get_if<std::string>(&row[0]);
    const auto* text = std::get_if<std::string>(&row[1]);
    if (!id || !text) continue;
    Json j = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) continue;  // unreadable: the task runs again
    records[*id] = std::move(j);
  }
  return records;
}

Status ResultsStore::ClearRun(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(*mutex_);
  return db_.Exec("DELETE FROM bench_results WHERE run_id = ?", {run_id});
}

std::string MakeRunId(const std::string& kind, const std::vector<std::string>& parts) {
  Sha256 h;
  for (const std::string& p : parts) {
    h.Update(p);
    h.Update("\n");
  }
  return kind + "-" + h.HexDigest().substr(0, 16);
}

}  // namespace cuda_agent
