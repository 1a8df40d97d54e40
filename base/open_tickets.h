// OpenTickets: numbered tickets, each held by one piece of work in flight,
// so that a caller can wait until all the work that began before its call
// has ended, while later work goes on and is not waited for. The engine's
// scans wait so for ingests handing their deliveries over; a move waits so
// for ingests that may not have seen it start.
//
// Threading: any thread. A ticket may be given back (its last copy
// dropped) on any thread; waitForEarlier() blocks its caller only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>

#include "base/mutex.h"

namespace webhooker {

class OpenTickets {
 public:
  // Given back when its last copy is dropped. Must not outlive the OpenTickets.
  using Ticket = std::shared_ptr<const void>;

  Ticket open() EXCLUDES(mutex_);
  // True once every ticket opened before the call is given back; false if
  // some are still held at `deadline` (none: waits as long as it takes).
  bool waitForEarlier(std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt)
      EXCLUDES(mutex_);

 private:
  void giveBack(uint64_t number) EXCLUDES(mutex_);

  Mutex mutex_;
  std::condition_variable_any givenBack_;
  uint64_t opened_ GUARDED_BY(mutex_) = 0;
  std::set<uint64_t> held_ GUARDED_BY(mutex_);  // by number, so the oldest is first
};

}  // namespace webhooker
