// judgement_queue.h — the bounded queue in front of the judge, one per device. A judgement that an
// API call asks for (a grade, an evaluation) first takes a place (Admit): when the device's queue
// is full it is refused at once with a Retry-After estimate (HTTP 429), so the server never holds
// an unbounded backlog. A place waits for one of the device's workers, then judges.
// JudgementQueue is itself a JudgeService: sessions are opened with it, so their grades run on the
// place their caller took (a thread-local hand-over, ScopedPlace) and anything else they judge
// waits for a worker like everybody (bounded by the sessions, one call each at a time).
//
//   JudgementQueue queue(judge, {.capacity = 8, .workers = 1});
//   std::optional<JudgementQueue::Place> p = queue.Admit("cuda", &retry_after_s);
//   if (!p) return Busy(retry_after_s);
//   JudgeResult r = queue.Run(std::move(*p), request);
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "common/json.h"
#include "judge/judge_service.h"

namespace cuda_agent {

struct JudgementQueueOptions {
  size_t capacity = 8;        // judgements waiting per device, beyond the running ones
  size_t workers = 1;         // judgements running at once per device
  double first_guess_s = 30;  // assumed length of a judgement before one was timed
};

class JudgementQueue : public JudgeService {
 public:
  // Place is a taken place in one device's queue; given back when dropped unused.
  class Place {
   public:
    Place(Place&& other) noexcept;
    Place& operator=(Place&&) = delete;
    ~Place();
    const std::string& device() const { return device_; }

   private:
    friend class JudgementQueue;
    Place(JudgementQueue* queue, std::string device) : queue_(queue), device_(std::move(device)) {}
    JudgementQueue* queue_;
    std::string device_;
  };

  // ScopedPlace lends `place` to the judgements this thread asks for through Evaluate.
  class ScopedPlace {
   public:
    explicit ScopedPlace(Place& place);
    ~ScopedPlace();
    ScopedPlace(const ScopedPlace&) = delete;
    ScopedPlace& operator=(const ScopedPlace&) = delete;
  };

  JudgementQueue(JudgeService& inner, JudgementQueueOptions options);

  // Admit takes a place on `device`, or returns nothing with `retry_after_s` set (queue full).
  std::optional<Place> Admit(const std::string& device, double* retry_after_s);
  // Run waits for a worker of the place's device, then judges.
  JudgeResult Run(Place place, const JudgeRequest& request);

  // JudgeService: uses the place lent to this thread, else waits for a worker without one.
  JudgeResult Evaluate(const JudgeRequest& request) override;
  std::string Describe() const override { return inner_.Describe(); }

  // SetWorkers sets how many judgements of `device` run at once (at least 1), instead of the
  // options' workers: with a remote judge, the live consumers of the device's stream. Places
  // waiting for a worker start at once when it grows; running ones finish when it shrinks.
  void SetWorkers(const std::string& device, size_t workers);

  // Snapshot: [{"device", "state": idle|busy|full, "queue_depth", "running", "workers",
  // "capacity", "mean_s"}], devices in name order.
  Json Snapshot() const;
  size_t QueueDepth() const;

 private:
  struct Device {
    size_t waiting = 0;  // places taken, not yet running
    size_t running = 0;
    double mean_s = 0;
    size_t judged = 0;
    size_t workers = 0;  // SetWorkers; 0: the options' workers
  };
  size_t WorkersOf(const Device& d) const { return d.workers > 0 ? d.workers : options_.workers; }
  JudgeResult RunOnDevice(const std::string& device, bool has_place, const JudgeRequest& request);
  void Release(const std::string& device);

  JudgeService& inner_;
  JudgementQueueOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::map<std::string, Device> devices_;
};

}  // namespace cuda_agent
