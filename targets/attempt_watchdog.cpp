#include "targets/attempt_watchdog.h"

#include "base/thread_name.h"

namespace webhooker {

AttemptWatchdog::AttemptWatchdog() : watchThread_([this](std::stop_token st) { run(st); }) {}

AttemptWatchdog::~AttemptWatchdog() {
  watchThread_.request_stop();
  changed_.notify_all();
}

uint64_t AttemptWatchdog::watch(httplib::Client& client, Deadline deadline) {
  return add(Watched{&client, nullptr, deadline});
}

uint64_t AttemptWatchdog::watch(httplib::ClientImpl& client, Deadline deadline) {
  return add(Watched{nullptr, &client, deadline});
}

uint64_t AttemptWatchdog::add(Watched watched) {
  MutexLock lock(watchedMutex_);
  const uint64_t ticket = nextTicket_++;
  const Deadline deadline = watched.deadline;
  watched_.emplace(ticket, watched);
  if (deadline < wakeAt_) {
    wakeAt_ = deadline;
    rescan_ = true;
    changed_.notify_one();
  }
  return ticket;
}

void AttemptWatchdog::unwatch(uint64_t ticket) {
  MutexLock lock(watchedMutex_);
  watched_.erase(ticket);
}

void AttemptWatchdog::run(std::stop_token stop) {
  nameThisThread("wh-watchdog");
  MutexLock lock(watchedMutex_);
  while (!stop.stop_requested()) {
    Deadline earliest = Deadline::max();
    const auto now = std::chrono::steady_clock::now();
    for (auto& [ticket, watched] : watched_) {
      if (watched.deadline <= now) {
        // stop() shuts the socket down; the blocked send() returns an error.
        // A client that has not opened its socket yet (its thread was slow
        // to get there) has nothing to shut, so the attempt stays watched
        // and is stopped again shortly, until unwatch().
        if (watched.client) watched.client->stop();
        else watched.impl->stop();
        watched.deadline = now + kStopAgainAfter;
      }
      earliest = std::min(earliest, watched.deadline);
    }
    wakeAt_ = earliest;
    rescan_ = false;
    const auto rescan = [&]() REQUIRES(watchedMutex_) { return rescan_; };
    if (earliest == Deadline::max())
      changed_.wait(lock, stop, rescan);
    else
      changed_.wait_until(lock, stop, earliest, rescan);
  }
}

}  // namespace webhooker
