// baseline_store.cc — the "baselines" schema (baselines, calibrations) and its statements.
#include "store/baseline_store.h"

#include <cmath>

namespace cuda_agent {
namespace {

std::vector<SqlValue> KeyValues(const BaselineKey& k) {
  return {k.task_id, k.device,          k.torch_version, k.policy,
          k.target,  int64_t{k.warmup}, int64_t{k.iters}};
}

constexpr const char* kWhere =
    "task_id = ? AND device = ? AND torch_version = ? AND policy = ? AND target = ? AND warmup = ? "
    "AND iters = ?";

}  // namespace

const std::vector<Migration>& BaselineStore::Migrations() {
  static const std::vector<Migration> steps = {
      {1,
       "baselines and calibrations (the tables of before versions: kept as they are)",
       {"CREATE TABLE IF NOT EXISTS baselines ("
        " task_id TEXT NOT NULL, device TEXT NOT NULL, torch_version TEXT NOT NULL,"
        " policy TEXT NOT NULL, target TEXT NOT NULL, warmup INTEGER NOT NULL, iters INTEGER NOT "
        "NULL,"
        " summary TEXT NOT NULL, measured_at TEXT NOT NULL,"
        " PRIMARY KEY (task_id, device, torch_version, policy, target, warmup, iters))",
        "CREATE TABLE IF NOT EXISTS calibrations ("
        " id INTEGER PRIMARY KEY, device TEXT NOT NULL, copy_us REAL, gemm_us REAL,"
        " at TEXT NOT NULL)",
        "CREATE INDEX IF NOT EXISTS calibrations_by_device ON calibrations (device, id)"}},
  };
  return steps;
}

Result<BaselineStore> BaselineStore::Open(const fs::path& path) {
  Result<Database> db = Database::Open(path);
  if (!db.ok()) return db.status();
  if (Status s = Migrate(db.value(), kSchema, Migrations()); !s.ok()) return s;
  return BaselineStore(std::move(db).value());
}

std::optional<StoredBaseline> BaselineStore::Get(const BaselineKey& key) {
  Result<std::vector<Row>> rows = db_.Query(
      std::string("SELECT summary, measured_at FROM baselines WHERE ") + kWhere, KeyValues(key));
  if (!rows.ok() || rows->empty()) return std::nullopt;
  const Row& row = rows->front();
  const auto* text = std::get_if<std::string>(&row[0]);
  const auto* when = std::get_if<std::string>(&row[1]);
  if (!text || !when) return std::nullopt;
  Json summary = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (summary.is_discarded() || !summary.is_object() ||
      !summary.value("time_us", Json()).is_number()) {
    return std::nullopt;  // an unreadable entry is a miss: it will be measured and replaced
  }
  return StoredBaseline{summary, *when};
}

Status BaselineStore::Put(const BaselineKey& key, const Json& summary) {
  return Write(key, summary, UtcNow());
}

Status BaselineStore::Import(const BaselineEntry& entry) {
  return Write(entry.key, entry.stored.summary, entry.stored.measured_at);
}

Status BaselineStore::Write(const BaselineKey& key, const Json& summary,
                            const std::string& measured_at) {
  std::vector<SqlValue> values = KeyValues(key);
  values.emplace_back(summary.dump());
  values.emplace_back(measured_at);
  return db_.Exec(
      "INSERT OR REPLACE INTO baselines (task_id, device, torch_version, policy, target, warmup, "
      "iters,"
      " summary, measured_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      values);
}

Status BaselineStore::Remove(const BaselineKey& key) {
  return db_.Exec(std::string("DELETE FROM baselines WHERE ") + kWhere, KeyValues(key));
}

Status BaselineStore::AddCalibration(const std::string& device, const CalibrationSample& sample) {
  Status added =
      db_.Exec("INSERT INTO calibrations (device, copy_us, gemm_us, at) VALUES (?, ?, ?, ?)",
               {device, sample.copy_us, sample.gemm_us, UtcNow()});
  if (!added.ok()) return added;
  return db_.Exec(
      "DELETE FROM calibrations WHERE device = ?1 AND id NOT IN (SELECT id FROM calibrations "
      "WHERE device = ?1 ORDER BY id DESC LIMIT ?2)",
      {device, static_cast<int64_t>(kKeptCalibrations)});
}

Result<std::vector<CalibrationSample>> BaselineStore::RecentCalibrations(const std::string& device,
                                                                         size_t n) {
  Result<std::vector<Row>> rows = db_.Query(
      "SELECT copy_us, gemm_us FROM calibrations WHERE device = ? ORDER BY id DESC LIMIT ?",
      {device, static_cast<int64_t>(n)});
  if (!rows.ok()) return rows.status();
  std::vector<CalibrationSample> out;
  for (auto it = rows->rbegin(); it != rows->rend(); ++it) {
    auto real = [](const SqlValue& v) {
      if (const auto* d = std::get_if<double>(&v)) return *d;
      if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
      return 0.0;
    };
    out.push_back({real((*it)[0]), real((*it)[1])});
  }
  return out;
}

Result<std::vector<BaselineEntry>> BaselineStore::List() {
  Result<std::vector<Row>> rows = db_.Query(
      "SELECT task_id, device, torch_version, policy, target, warmup, iters, summary, measured_at"
      " FROM baselines ORDER BY task_id, device, torch_version, policy, target, warmup, iters");
  if (!rows.ok()) return rows.status();
  std::vector<BaselineEntry> entries;
  for (const Row& row : rows.value()) {
    auto text = [&](size_t i) {
      const auto* s = std::get_if<std::string>(&row[i]);
      return s ? *s : std::string();
    };
    auto integer = [&](size_t i) {
      const auto* n = std::get_if<int64_t>(&row[i]);
      return n ? static_cast<int>(*n) : 0;
    };
    Json summary = Json::parse(text(7), nullptr, /*allow_exceptions=*/false);
    if (summary.is_discarded()) continue;  // unreadable: not worth carrying elsewhere
    entries.push_back({{text(0), text(1), text(2), text(3), text(4), integer(5), integer(6)},
                       {summary, text(8)}});
  }
  return entries;
}

Json BaselineEntryToJson(const BaselineEntry& e) {
  return {{"task_id", e.key.task_id},
          {"device", e.key.device},
          {"torch_version", e.key.torch_version},
          {"policy", e.key.policy},
          {"target", e.key.target},
          {"warmup", e.key.warmup},
          {"iters", e.key.iters},
          {"summary", e.stored.summary},
          {"measured_at", e.stored.measured_at}};
}

Result<BaselineEntry> BaselineEntryFromJson(const Json& line) {
  if (!line.is_object()) return InvalidArgument("a baseline entry must be a JSON object");
  BaselineEntry e;
  for (auto [name, field] : {std::pair{"task_id", &e.key.task_id},
                             {"device", &e.key.device},
                             {"torch_version", &e.key.torch_version},
                             {"policy", &e.key.policy},
                             {"target", &e.key.target},
                             {"measured_at", &e.stored.measured_at}}) {
    if (!line.contains(name) || !line[name].is_string()) {
      return InvalidArgument(std::string("a baseline entry needs a string \"") + name + "\"");
    }
    *field = line[name].get<std::string>();
  }
  for (auto [name, field] : {std::pair{"warmup", &e.key.warmup}, {"iters", &e.key.iters}}) {
    if (!line.contains(name) || !line[name].is_number_integer()) {
      return InvalidArgument(std::string("a baseline entry needs an integer \"") + name + "\"");
    }
    *field = line[name].get<int>();
  }
  e.stored.summary = line.value("summary", Json());
  if (!e.stored.summary.is_object() || !e.stored.summary.value("time_us", Json()).is_number()) {
    return InvalidArgument("a baseline entry needs a \"summary\" with a numeric time_us");
  }
  return e;
}

}  // namespace cuda_agent
