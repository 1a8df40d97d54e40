// JqShares: who gets the jq sandbox's next free worker, so that one
// webhook's programs cannot stall every other webhook's routing.
//
//   turns      a free worker goes to the waiting webhook served least
//              recently (round robin between webhooks, whatever their
//              number of waiting calls), a webhook within its share before
//              one over it
//   share      each webhook has an account of worker time: every run is
//              charged the time it held its worker, and the account refills
//              at the pool's time divided among the webhooks active in the
//              last kActiveWindow (every worker's when it is alone), holding
//              at most kBurstBudgets budgets. Below zero the webhook is over
//              its share: it goes after every webhook within theirs and
//              holds one worker at a time, until the account is back at zero.
//              Alone it can use the whole pool; beside others, long runs
//              just under the budget cannot take more than its share
//   strikes    a run that overran its budget (timeout, memory, crash) is a
//              strike; a run within it takes one away
//   throttle   after a strike the webhook gets no worker for
//              budget x 4^(strikes - 1), at most kMaxThrottle (a minute);
//              its calls meanwhile are refused at once (they are retried,
//              never a verdict). With strikes left it holds one worker at a
//              time, and its runs take spare CPU only (jq_sandbox.h).
//              An overrun costs a worker's kill and respawn, and the new
//              worker's compiles, besides its budget: hence the steep curve,
//              which lets a webhook that overruns on every event run about
//              once a minute
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
  using Duration = std::chrono::steady_clock::duration;
  static constexpr std::chrono::milliseconds kMaxThrottle{60000};
  static constexpr int kBurstBudgets = 10;
  static constexpr std::chrono::seconds kActiveWindow{1};

  JqShares(int workers, std::chrono::milliseconds budget);

  // When `tenant` may run again, if it is throttled at `now`.
  std::optional<TimePoint> throttledUntil(std::string_view tenant, TimePoint now) const;
  // Whether `tenant` has used more than its share of worker time at `now`.
  bool overShare(std::string_view tenant, TimePoint now) const;
  // Whether `tenant` has strikes: one of its recent runs overran its budget.
  bool struck(std::string_view tenant) const;

  // A call of `tenant` starts or stops waiting for a worker.
  void waiting(std::string_view tenant, TimePoint now);
  void gaveUp(std::string_view tenant, TimePoint now);
  // Whether a waiting call of `tenant` takes the free worker now: among the
  // webhooks waiting, under their cap and not throttled, it is within its
  // share if any of them is, and the least recently served of those.
  bool isTurnOf(std::string_view tenant, TimePoint now) const;
  // A waiting call of `tenant` took a worker.
  void took(std::string_view tenant, TimePoint now);
  // It gave the worker back after holding it for `held`; `overran`: its run
  // overran the budget.
  void returned(std::string_view tenant, bool overran, Duration held, TimePoint now);

 private:
  struct Tenant {
    int waiting = 0;
    int running = 0;
    int strikes = 0;
    TimePoint throttledUntil{};
    uint64_t lastServed = 0;  // turns_ when it last took a worker
    double account = 0;       // worker-ms, at `accountAt`
    TimePoint accountAt{};
    TimePoint lastActive{};
  };

  Tenant& tenant(std::string_view name, TimePoint now);
  // How many webhooks were active (waiting, running, or either within
  // kActiveWindow) at `now`.
  size_t activeAt(TimePoint now) const;
  // The account at `now`, `active` webhooks sharing the pool: refilled since
  // it was last charged at the share it has now.
  double accountAt(const Tenant& t, TimePoint now, size_t active) const;
  // Forgets the webhooks with nothing to remember: nothing waiting or
  // running, no strike, a full account, not active lately.
  void forgetIdle(TimePoint now);

  const int workers_;
  const std::chrono::milliseconds budget_;
  const double burst_;  // worker-ms
  uint64_t turns_ = 0;
  std::unordered_map<std::string, Tenant> tenants_;
};

}  // namespace webhooker
