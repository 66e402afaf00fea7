// session_registry.h — the sessions `serve` holds in memory while they live: open ones (with their
// agent Session) and graded ones (their folder kept until the TTL or a DELETE). It counts them
// against --max-sessions, marks the ones an operation holds (busy: never reaped), restarts a
// session's TTL on each use, and runs the reaper: a thread that hands sessions idle past their
// TTL to the owner's `expire` callback. What a session does (calls, grades) and what is stored are
// the owner's (server/environment.cc); this room only keeps the set and its counters.
//
//   SessionRegistry registry(256, [&](Live& s) { Finish(s, "expired"); });
//   if (!registry.Reserve(&open)) return TooMany(open);
//   registry.Add(record);                        // the reserved place becomes the session
//   std::shared_ptr<Live> s = registry.Acquire(id);  // busy until Release(*s)
//   registry.StartReaper(1.0, [&] { store.CheckpointPassive(); });
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/session.h"
#include "common/json.h"

namespace cuda_agent {

// Live is a session of this server's lifetime: open (with its Session) or graded (its folder kept
// until the TTL or a DELETE).
struct Live {
  std::string id;
  Json task;
  std::string task_spec;
  std::string device;
  std::string policy;
  int turn_limit = 0;
  double ttl_s = 0;
  double created_at = 0;
  fs::path dir;
  fs::path task_dir;  // an inline task's file lives here (empty for references)

  std::mutex op;  // one operation at a time: call, grade, close, reap
  // Guarded by `op`: the call ids this session answered (stored in the calls table), so that a new
  // call costs no lookup there and only a repeated id is read back.
  std::set<std::string> call_ids;
  // Guarded by `op`:
  std::unique_ptr<Session> session;
  // Guarded by the registry's lock (read and written through SessionRegistry):
  std::string status = "open";
  int calls_used = 0;
  double expires_at = 0;
  int busy = 0;  // operations holding this record; the reaper leaves busy ones alone

  // IsOpen: the one definition of an open session — one that takes calls (not graded, expired,
  // interrupted or closed). It is what --max-sessions bounds, health's `sessions_open` counts and
  // the status page lists (so its count and its table agree). Caller holds the registry's lock.
  bool IsOpen() const { return status == "open"; }
};

// LiveView: a live session's guarded fields, read under the registry's lock.
struct LiveView {
  std::string id;
  Json task;
  std::string device;
  std::string status;
  bool open = false;
  int calls_used = 0;
  int turn_limit = 0;
  double expires_at = 0;
  bool busy = false;
};

class SessionRegistry {
 public:
  // `expire` ends a session idle past its TTL (called with the session's `op` held, after the
  // registry forgot it).
  SessionRegistry(size_t max_open, std::function<void(Live&)> expire);
  ~SessionRegistry();
  SessionRegistry(const SessionRegistry&) = delete;
  SessionRegistry& operator=(const SessionRegistry&) = delete;

  // Reserve takes a place for a session being opened (it counts as open from now on); false with
  // `open_now` set when max_open sessions are open or being opened.
  bool Reserve(size_t* open_now);
  // Unreserve gives a place back (the session did not open); Add turns it into `record`.
  void Unreserve();
  void Add(std::shared_ptr<Live> record);
  // Restore adds a session reopened after a restart (no place reserved: it was open before).
  void Restore(std::shared_ptr<Live> record);

  // Acquire finds a live session and marks it busy (its TTL starts again); null when not live.
  std::shared_ptr<Live> Acquire(const std::string& id);
  // Release ends what Acquire or Remove began (the TTL starts again).
  void Release(Live& record);
  // Remove forgets a live session and returns it busy (Release it when done); null when not live.
  std::shared_ptr<Live> Remove(const std::string& id);

  // View reads a session's guarded fields; Find does the same by id (nullopt when not live).
  LiveView View(const Live& record) const;
  std::optional<LiveView> Find(const std::string& id) const;
  void SetStatus(Live& record, const std::string& status);
  // CountCall adds one to the session's calls and returns the new count.
  int CountCall(Live& record);

  size_t OpenCount() const;            // Live::IsOpen sessions
  std::vector<LiveView> Open() const;  // the open sessions, by id
  std::vector<std::shared_ptr<Live>> All() const;

  // Reap expires the sessions idle past their TTL: forgotten here, then `expire` for each.
  void Reap();
  // StartReaper runs Reap every `interval_s`, then `after_each` (the store's checkpoint), on a
  // thread of its own until StopReaper (or the destructor).
  void StartReaper(double interval_s, std::function<void()> after_each);
  void StopReaper();
  // WaitIdle waits up to `grace_s` until no session is busy; the busy count left (0: idle).
  int WaitIdle(double grace_s);

 private:
  const size_t max_open_;
  std::function<void(Live&)> expire_;
  mutable std::mutex mutex_;
  std::condition_variable idle_;  // the busy count went down
  std::map<std::string, std::shared_ptr<Live>> live_;
  size_t opening_ = 0;  // sessions being opened (they count against max_open)
  int busy_total_ = 0;
  std::thread reaper_;
  std::condition_variable reaper_wake_;
  bool reaper_stop_ = false;
};

}  // namespace cuda_agent
