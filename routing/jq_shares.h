// JqShares: who gets the jq sandbox's next free worker, so that one
// webhook's programs cannot stall every other webhook's routing.
//
//   turns      a free worker goes to the waiting webhook served least
//              recently (round robin between webhooks, whatever their
//              number of waiting calls); a webhook with no call waiting or
//              running, and no strike, is forgotten: it comes first again
//   strikes    a run that overran its budget (timeout, memory, crash) is a
//              strike; a run within it takes one away
//   throttle   after a strike the webhook gets no worker for
//              budget x 2^(strikes - 1), at most kMaxThrottle; its calls
//              meanwhile are refused at once (they are retried, never a
//              verdict). With strikes left it holds one worker at a time.
//
// Only bookkeeping: no threads, no I/O, times passed in. The caller (the
// sandbox) serialises every call under its own mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace webhooker {

class JqShares {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  static constexpr std::chrono::milliseconds kMaxThrottle{6400};

  JqShares(int workers, std::chrono::milliseconds budget);

  // When `tenant` may run again, if it is throttled at `now`.
  std::optional<TimePoint> throttledUntil(std::string_view tenant, TimePoint now) const;

  // A call of `tenant` starts or stops waiting for a worker.
  void waiting(std::string_view tenant);
  void gaveUp(std::string_view tenant);
  // Whether a waiting call of `tenant` takes the free worker now: it is the
  // least recently served webhook among those waiting, under their cap and
  // not throttled.
  bool isTurnOf(std::string_view tenant, TimePoint now) const;
  // A waiting call of `tenant` took a worker.
  void took(std::string_view tenant);
  // It gave the worker back; `overran`: its run overran the budget.
  void returned(std::string_view tenant, bool overran, TimePoint now);

 private:
  struct Tenant {
    int waiting = 0;
    int running = 0;
    int strikes = 0;
    TimePoint throttledUntil{};
    uint64_t lastServed = 0;  // turns_ when it last took a worker
  };

  int capOf(const Tenant& t) const { return t.strikes > 0 ? 1 : workers_; }
  // Forgets a tenant with nothing to remember.
  void forgetIfIdle(std::string_view tenant);

  const int workers_;
  const std::chrono::milliseconds budget_;
  uint64_t turns_ = 0;
  std::unordered_map<std::string, Tenant> tenants_;
};

}  // namespace webhooker
