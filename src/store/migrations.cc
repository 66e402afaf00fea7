// migrations.cc — the schema_versions table and the steps' transaction.
#include "store/migrations.h"

#include "common/log.h"

namespace cuda_agent {
namespace {

constexpr const char* kVersionsTable =
    "CREATE TABLE IF NOT EXISTS schema_versions (schema TEXT PRIMARY KEY, version INTEGER NOT "
    "NULL, migrated_at TEXT NOT NULL)";

Status CheckSteps(const std::string& schema, const std::vector<Migration>& steps) {
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].version != static_cast<int>(i) + 1) {
      return Internal("schema " + schema + ": migration step " + std::to_string(i + 1) +
                      " has version " + std::to_string(steps[i].version) +
                      " (steps are numbered 1, 2, ... in order)");
    }
  }
  return OkStatus();
}

Result<int> StoredVersion(Database& db, const std::string& schema) {
  Result<std::vector<Row>> rows =
      db.Query("SELECT version FROM schema_versions WHERE schema = ?", {schema});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return 0;
  const auto* version = std::get_if<int64_t>(&rows->front()[0]);
  if (!version) return Internal("schema " + schema + ": its stored version is not an integer");
  return static_cast<int>(*version);
}

// RunSteps runs the steps after `from`; the caller's transaction holds them together.
Status RunSteps(Database& db, const std::string& schema, const std::vector<Migration>& steps,
                int from) {
  for (const Migration& step : steps) {
    if (step.version <= from) continue;
    for (const std::string& sql : step.statements) {
      if (Status s = db.Exec(sql); !s.ok()) {
        return Status(s.code(), "schema " + schema + " step " + std::to_string(step.version) +
                                    " (" + step.purpose + "): " + s.message());
      }
    }
  }
  return db.Exec(
      "INSERT INTO schema_versions (schema, version, migrated_at) VALUES (?, ?, ?) ON CONFLICT "
      "(schema) DO UPDATE SET version = excluded.version, migrated_at = excluded.migrated_at",
      {schema, static_cast<int64_t>(steps.size()), UtcNow()});
}

}  // namespace

Result<int> SchemaVersion(Database& db, const std::string& schema) {
  if (Status s = db.Exec(kVersionsTable); !s.ok()) return s;
  return StoredVersion(db, schema);
}

Status Migrate(Database& db, const std::string& schema, const std::vector<Migration>& steps) {
  if (Status s = CheckSteps(schema, steps); !s.ok()) return s;
  const int latest = static_cast<int>(steps.size());
  // Up to date (the common case): no write lock taken. Otherwise the version is read again under
  // the lock, since another process may have migrated meanwhile.
  if (Result<int> now = StoredVersion(db, schema); now.ok() && now.value() == latest) {
    return OkStatus();
  }
  if (Status s = db.Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  Status outcome = db.Exec(kVersionsTable);
  Result<int> from = outcome.ok() ? StoredVersion(db, schema) : Result<int>(outcome);
  if (!from.ok()) {
    outcome = from.status();
  } else if (from.value() > latest) {
    outcome = FailedPrecondition(db.path().string() + ": its " + schema + " schema is at version " +
                                 std::to_string(from.value()) +
                                 ", newer than this cuda-agent knows (" + std::to_string(latest) +
                                 "); a newer cuda-agent wrote it: use that one, or another file");
  } else if (from.value() < latest) {
    outcome = RunSteps(db, schema, steps, from.value());
  }
  if (!outcome.ok()) {
    (void)db.Exec("ROLLBACK");
    return outcome;
  }
  if (Status s = db.Exec("COMMIT"); !s.ok()) {
    (void)db.Exec("ROLLBACK");
    return s;
  }
  if (from.value() < latest) {
    LogDebug("store: " + db.path().string() + ": " + schema + " schema migrated from version " +
             std::to_string(from.value()) + " to " + std::to_string(latest));
  }
  return OkStatus();
}

}  // namespace cuda_agent
