// AttemptWatchdog: ends HTTP attempts that outlive their total timeout.
//
// cpp-httplib's timeouts apply to each connect, read and write on their
// own, so a receiver that trickles a byte at a time (headers included) could
// hold an attempt, and its worker, for ever. The watchdog shuts the
// connection of any attempt past its deadline, and again every
// kStopAgainAfter until the attempt is unwatched (a client whose thread had
// not opened its socket yet at the deadline has nothing to shut the first
// time); the attempt then fails as a timeout and is retried like any other.
//
// Threading: watch()/unwatch() from any thread; one thread of its own
// (watchThread_). Once unwatch() has returned, the watchdog will not touch
// that client again, so the caller may reuse or destroy it.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <thread>

#include "base/mutex.h"

namespace webhooker {

class AttemptWatchdog {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  static constexpr std::chrono::milliseconds kStopAgainAfter{50};

  AttemptWatchdog();
  ~AttemptWatchdog();
  AttemptWatchdog(const AttemptWatchdog&) = delete;
  AttemptWatchdog& operator=(const AttemptWatchdog&) = delete;

  // Returns a ticket for unwatch().
  uint64_t watch(httplib::Client& client, Deadline deadline);
  uint64_t watch(httplib::ClientImpl& client, Deadline deadline);
  void unwatch(uint64_t ticket);

 private:
  struct Watched {
    httplib::Client* client;  // one of the two
    httplib::ClientImpl* impl;
    Deadline deadline;
  };
  uint64_t add(Watched watched);
  void run(std::stop_token stop);

  Mutex watchedMutex_;  // held while stopping a client
  std::condition_variable_any changed_;
  std::map<uint64_t, Watched> watched_ GUARDED_BY(watchedMutex_);
  uint64_t nextTicket_ GUARDED_BY(watchedMutex_) = 1;
  // When the watch thread wakes next. A watch() whose deadline comes later
  // lets it sleep: with one timeout per target that is nearly every watch(),
  // and a wake-up per attempt would cost a thread switch per delivery.
  Deadline wakeAt_ GUARDED_BY(watchedMutex_) = Deadline::max();
  bool rescan_ GUARDED_BY(watchedMutex_) = false;  // a deadline before wakeAt_ arrived
  std::jthread watchThread_;
};

}  // namespace webhooker
