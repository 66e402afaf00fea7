// baseline_store.cc — the baselines table.
#include "store/baseline_store.h"

#include <chrono>
#include <cmath>
#include <ctime>

namespace cuda_agent {
namespace {

std::string NowUtc() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<SqlValue> KeyValues(const BaselineKey& k) {
  return {k.task_id, k.device, k.torch_version, k.policy, k.target, int64_t{k.warmup}, int64_t{k.iters}};
}

constexpr const char* kWhere =
    "task_id = ? AND device = ? AND torch_version = ? AND policy = ? AND target = ? AND warmup = ? "
    "AND iters = ?";

}  // namespace

Result<BaselineStore> BaselineStore::Open(const fs::path& path) {
  Result<Database> db = Database::Open(path);
  if (!db.ok()) return db.status();
  Status made = db->Exec(
      "CREATE TABLE IF NOT EXISTS baselines ("
      " task_id TEXT NOT NULL, device TEXT NOT NULL, torch_version TEXT NOT NULL,"
      " policy TEXT NOT NULL, target TEXT NOT NULL, warmup INTEGER NOT NULL, iters INTEGER NOT NULL,"
      " summary TEXT NOT NULL, measured_at TEXT NOT NULL,"
      " PRIMARY KEY (task_id, device, torch_version, policy, target, warmup, iters))");
  if (!made.ok()) return made;
  return BaselineStore(std::move(db).value());
}

std::optional<StoredBaseline> BaselineStore::Get(const BaselineKey& key) {
  Result<std::vector<Row>> rows =
      db_.Query(std::string("SELECT summary, measured_at FROM baselines WHERE ") + kWhere, KeyValues(key));
  if (!rows.ok() || rows->empty()) return std::nullopt;
  const Row& row = rows->front();
  const auto* text = std::get_if<std::string>(&row[0]);
  const auto* when = std::get_if<std::string>(&row[1]);
  if (!text || !when) return std::nullopt;
  Json summary = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (summary.is_discarded() || !summary.is_object() || !summary.value("time_us", Json()).is_number()) {
    return std::nullopt;  // an unreadable entry is a miss: it will be measured and replaced
  }
  return StoredBaseline{summary, *when};
}

Status BaselineStore::Put(const BaselineKey& key, const Json& summary) {
  std::vector<SqlValue> values = KeyValues(key);
  values.emplace_back(summary.dump());
  values.emplace_back(NowUtc());
  return db_.Exec(
      "INSERT OR REPLACE INTO baselines (task_id, device, torch_version, policy, target, warmup, iters,"
      " summary, measured_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      values);
}

Status BaselineStore::Remove(const BaselineKey& key) {
  return db_.Exec(std::string("DELETE FROM baselines WHERE ") + kWhere, KeyValues(key));
}

bool Drifted(double stored_us, double fresh_us, double tolerance) {
  if (!(stored_us > 0) || !(fresh_us > 0)) return true;
  return std::fabs(fresh_us / stored_us - 1.0) > tolerance;
}

}  // namespace cuda_agent
