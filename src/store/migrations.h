// migrations.h — versioned schemas for the SQLite stores. Each store names its schema (several
// share one file: the cache's store.sqlite holds the baselines and the bench results) and lists its
// migration steps in order; Migrate brings the file to the last step inside one transaction, and
// the `schema_versions` table records each schema's version. A file without that table is version
// 0 (written before versions existed): its tables are there, so a schema's first step is written
// to keep them (CREATE ... IF NOT EXISTS). A file whose version is newer than the steps this binary
// knows is refused, never downgraded.
//
//   const std::vector<Migration> kSteps = {
//       {1, "the tables", {"CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v TEXT)"}},
//       {2, "an index for lookups by v", {"CREATE INDEX IF NOT EXISTS t_by_v ON t (v)"}},
//   };
//   if (Status s = Migrate(db, "example", kSteps); !s.ok()) return s;
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "store/database.h"

namespace cuda_agent {

// Migration is one step of a schema: the statements that take it from `version - 1` to `version`.
struct Migration {
  int version = 0;
  std::string purpose;  // one line: what the step adds, for the log and the reader
  std::vector<std::string> statements;
};

// Migrate brings `schema` in `db` to the last of `steps` (versions 1, 2, ... in order), running
// the missing steps and recording the version in one transaction (BEGIN IMMEDIATE: two processes
// opening the same file migrate it once). A stored version newer than the last step is a
// FailedPrecondition that names the file, the schema and both versions.
Status Migrate(Database& db, const std::string& schema, const std::vector<Migration>& steps);

// SchemaVersion is the version recorded for `schema` (0 when none is).
Result<int> SchemaVersion(Database& db, const std::string& schema);

}  // namespace cuda_agent
