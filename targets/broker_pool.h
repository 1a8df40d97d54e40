// BrokerPool: idle connections to message brokers, kept per destination key
// (the vetted address, port and credentials), for the queue targets whose
// client connections serve one attempt at a time (hiredis, librabbitmq).
// An attempt borrows one (or gets nothing and connects), and gives it back
// only if it is still good; a broken one is dropped by its destructor.
//
// Threading: borrow() and giveBack() are safe from any thread.
// Also the checks every queue attempt starts with (queueConfig, vetBroker) and
// the outcome of one that reached for its broker (BrokerAttempt).
#pragma once

#include <sys/time.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "net/ssrf_guard.h"
#include "targets/retrying_target.h"

namespace webhooker {

template <typename Connection>
class BrokerPool {
 public:
  static constexpr size_t kMaxIdlePerKey = 16;

  std::unique_ptr<Connection> borrow(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = idle_.find(key);
    if (it == idle_.end() || it->second.empty()) return nullptr;
    auto connection = std::move(it->second.back());
    it->second.pop_back();
    return connection;
  }

  void giveBack(const std::string& key, std::unique_ptr<Connection> connection) {
    std::lock_guard lock(mutex_);
    auto& list = idle_[key];
    if (list.size() < kMaxIdlePerKey) list.push_back(std::move(connection));
  }

 private:
  std::mutex mutex_;  // guards idle_
  std::map<std::string, std::vector<std::unique_ptr<Connection>>> idle_;
};

// The start every queue attempt shares: the config of its type (or the
// invalid_config outcome) and the broker's vetted address (or the outcome:
// blocked_destination is terminal and sends nothing, a DNS failure retries).
template <typename Config>
const Config* queueConfig(const DeliveryContext& ctx, AttemptOutcome& out) {
  out.verdict = AttemptOutcome::Verdict::kTerminal;
  out.reason = FailureKind::kInvalidConfig;
  if (const auto* error = std::get_if<Error>(&ctx.config)) {
    out.error = error->message;
    return nullptr;
  }
  const auto* config = std::get_if<Config>(&ctx.config);
  if (!config) out.error = "the target has no config of its type";
  return config;
}

inline std::optional<IpAddress> vetBroker(const SsrfGuard& guard, const BrokerAddress& address,
                                          AttemptOutcome& out) {
  auto vetted = guard.vet(address.vettable());
  if (vetted) return vetted.value();
  out.error = vetted.error().message;
  if (vetted.error().isBlockedDestination()) {
    out.verdict = AttemptOutcome::Verdict::kTerminal;
    out.reason = FailureKind::kBlockedDestination;
  } else {
    out.verdict = AttemptOutcome::Verdict::kRetry;
    out.reason.reset();
    out.sent = true;
  }
  return std::nullopt;
}

// An attempt past its checks, reaching for the broker: whatever it ends with
// was sent (it counts against the target's retries), timed from here.
class BrokerAttempt {
 public:
  using Clock = std::chrono::steady_clock;

  explicit BrokerAttempt(AttemptOutcome& out) : out_(out), started_(Clock::now()) {}

  Clock::time_point started() const { return started_; }

  // Fills the outcome (no reason: a reason marks what never reached a broker).
  AttemptOutcome finish(AttemptOutcome::Verdict verdict, std::string error) const {
    out_.verdict = verdict;
    out_.reason.reset();
    out_.sent = true;
    out_.error = std::move(error);
    out_.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
    return out_;
  }

 private:
  AttemptOutcome& out_;
  const Clock::time_point started_;
};

// A timeout as the C clients take it (at least 1 ms).
inline timeval brokerTimeval(std::chrono::milliseconds ms) {
  if (ms.count() < 1) ms = std::chrono::milliseconds(1);
  return timeval{static_cast<time_t>(ms.count() / 1000),
                 static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

// The host to connect to for a vetted address ("::1" bare, as C clients take it).
inline std::string connectHost(const IpAddress& address) { return address.toString(); }

}  // namespace webhooker
