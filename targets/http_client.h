// HttpClient: the one way webhooker sends HTTP to a receiver (http and
// slack targets). SSRF-safe: every attempt vets the destination through the
// SsrfGuard and connects to the vetted address (pinned, so DNS cannot change
// it between check and connect). The attempt's timeout covers resolving the
// host too: a lookup runs on LookupThreads and is given up at the deadline. Redirects are never followed. Keep-alive
// connections are pooled per destination; TCP_NODELAY is on.
//
// Threading: send() is safe from many threads; each call borrows a pooled
// connection for its duration (poolMutex_ guards the idle lists).
#pragma once

#include <httplib.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/url.h"
#include "storage/event_payload.h"
#include "targets/attempt_watchdog.h"
#include "targets/delivery_config.h"
#include "net/lookup_threads.h"
#include "net/ssrf_guard.h"

namespace webhooker {

struct OutboundRequest {
  Url url;
  std::string method = "POST";
  HeaderList headers;  // Content-Type included here if any
  std::string body;
  std::chrono::milliseconds timeout = kDefaultHttpTimeout;  // the whole attempt, connect to last byte
};

struct OutboundResponse {
  enum class Failure {
    kNone,        // a response arrived (any status)
    kBlocked,     // the SSRF guard refused the destination
    kDns,         // the host did not resolve
    kConnect,     // refused, unreachable, reset before a response
    kTimeout,     // connect, read, write or total timeout
    kTls,         // handshake or certificate failure
    kOther,
  };
  Failure failure = Failure::kNone;
  int status = 0;
  std::string body;  // at most kResponseBodyCap bytes; the rest is read and dropped
  std::optional<std::chrono::milliseconds> retryAfter;
  std::string error;  // human text for the result row when failure != kNone
  std::chrono::milliseconds duration{0};
};

class HttpClient {
 public:
  static constexpr size_t kResponseBodyCap = 4096;
  static constexpr size_t kMaxIdlePerDestination = 16;
  static constexpr size_t kLookupThreads = 4;

  HttpClient(const SsrfGuard& guard, const Clock& clock);
  OutboundResponse send(OutboundRequest request);

 private:
  using Connection = std::unique_ptr<httplib::Client>;
  Connection borrow(const std::string& key, const Url& url, const std::string& pinnedAddress);
  void giveBack(const std::string& key, Connection connection);
  // The guard's verdict, or nullopt if resolving the host outlasted `deadline`.
  std::optional<Result<IpAddress>> vetBy(const Url& url,
                                         std::chrono::steady_clock::time_point deadline);

  const SsrfGuard& guard_;
  const Clock& clock_;
  AttemptWatchdog watchdog_;
  LookupThreads lookups_{kLookupThreads};
  Mutex poolMutex_;
  std::unordered_map<std::string, std::vector<Connection>> idle_ GUARDED_BY(poolMutex_);
};

// Parses a Retry-After value: delay-seconds or an HTTP-date (relative to now).
std::optional<std::chrono::milliseconds> parseRetryAfter(const std::string& value, TimePoint now);

}  // namespace webhooker
