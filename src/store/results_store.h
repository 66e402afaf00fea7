// results_store.h — the per-task results of benchmark runs (`bench`, `baselines`) in the SQLite
// store (store/database.h): a `bench_runs` row describes each run, a `bench_results` row keyed by
// run id + task id holds each finished task's record. A record is written the moment its task
// finishes, so a run that is killed loses only the tasks in flight, and re-running the same command
// (same run id) resumes. Safe to share between threads: every statement is serialised. The tables
// are the "bench" schema, versioned through store/migrations.h like every store's (the file is
// shared with the baseline store).
//
//   Result<ResultsStore> store = ResultsStore::Open(cache / "store.sqlite");
//   std::string run = MakeRunId("bench", {suite, solver, policy, device});
//   store->BeginRun(run, {{"suite", suite}});
//   store->Put(run, task.id, record);
//   std::map<std::string, Json> done = store->Records(run).value();
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "store/database.h"
#include "store/migrations.h"

namespace cuda_agent {

class ResultsStore {
 public:
  // Open opens (or creates) the file and migrates the "bench" schema; a file a newer cuda-agent
  // migrated past what this one knows is refused.
  static Result<ResultsStore> Open(const fs::path& path);
  static const std::vector<Migration>& Migrations();
  static constexpr const char* kSchema = "bench";

  // BeginRun records the run's description the first time; later calls keep the first one.
  Status BeginRun(const std::string& run_id, const Json& description);
  std::optional<Json> RunDescription(const std::string& run_id);
  // Put stores (or replaces) one task's record.
  Status Put(const std::string& run_id, const std::string& task_id, const Json& record);
  // Records returns the run's records by task id.
  Result<std::map<std::string, Json>> Records(const std::string& run_id);
  // ClearRun forgets the run's records (its description stays).
  Status ClearRun(const std::string& run_id);
  const fs::path& path() const { return db_.path(); }

 private:
  explicit ResultsStore(Database db) : db_(std::move(db)), mutex_(std::make_unique<std::mutex>()) {}
  Database db_;
  std::unique_ptr<std::mutex> mutex_;
};

// MakeRunId is `<kind>-` + the first 16 hex digits of SHA-256 over the parts (newline-separated):
// the same command gives the same id, so it resumes.
std::string MakeRunId(const std::string& kind, const std::vector<std::string>& parts);

}  // namespace cuda_agent
