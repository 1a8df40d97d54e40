// HttpClient: the one way webhooker sends HTTP to a receiver (http and
// slack targets). SSRF-safe: every attempt vets the destination through the
// SsrfGuard and connects to the vetted address (pinned, so DNS cannot change
// it between check and connect). The attempt's timeout covers resolving the
// host too: a lookup runs on LookupThreads and is given up at the deadline. Redirects are never followed. Keep-alive
// connections are pooled per destination and egress (proxy, TLS settings:
// targets/egress.h); TCP_NODELAY is on. With a forward proxy (the daemon's
// --egress-proxy or the target's own) the vetted address is what the proxy
// is asked to CONNECT to (targets/egress_connection.h).
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
#include "targets/egress.h"
#include "targets/egress_connection.h"
#include "net/lookup_threads.h"
#include "net/ssrf_guard.h"

namespace webhooker {

struct OutboundRequest {
  Url url;
  std::string method = "POST";
  HeaderList headers;  // Content-Type included here if any
  std::string body;
  std::chrono::milliseconds timeout = kDefaultHttpTimeout;  // the whole attempt, connect to last byte
  // The target's proxy and TLS settings; null: the daemon's proxy, if any,
  // and the system's CAs.
  std::shared_ptr<const EgressOptions> egress;
};

struct OutboundResponse {
  enum class Failure {
    kNone,        // a response arrived (any status)
    kBlocked,     // the SSRF guard refused the destination
    kDns,         // the host did not resolve
    kConnect,     // refused, unreachable, reset before a response; the proxy refused
    kTimeout,     // connect, read, write or total timeout
    kTls,         // handshake or certificate failure
    kAuth,        // no OAuth2 token: the token endpoint failed or refused
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
  static constexpr size_t kTokenAnswerCap = 64 * 1024;

  // `proxy`: the daemon's --egress-proxy, used by targets without their own.
  HttpClient(const SsrfGuard& guard, const Clock& clock,
             std::optional<ProxyAddress> proxy = std::nullopt);
  OutboundResponse send(OutboundRequest request);
  // The guard every destination goes through (the queue targets vet their
  // brokers with it too).
  const SsrfGuard& guard() const { return guard_; }

 private:
  // One request, no OAuth2; keeps at most `bodyCap` bytes of the answer.
  OutboundResponse sendOnce(OutboundRequest request, size_t bodyCap = kResponseBodyCap);
  // The target's bearer token, from the cache or its token endpoint; the
  // error text (kAuth) when there is none. `refused`: the receiver refused
  // this token, fetch another.
  Result<std::string> bearerToken(const EgressOptions& egress,
                                  std::chrono::steady_clock::time_point deadline,
                                  const std::string& refused = "");
  using Connection = std::unique_ptr<EgressConnection>;
  Connection borrow(const std::string& key, const OutboundRequest& request,
                    const std::string& pinnedAddress);
  void giveBack(const std::string& key, Connection connection);
  // The guard's verdict, or nullopt if resolving the host outlasted `deadline`.
  std::optional<Result<IpAddress>> vetBy(const Url& url,
                                         std::chrono::steady_clock::time_point deadline);

  const SsrfGuard& guard_;
  const Clock& clock_;
  const std::optional<ProxyAddress> proxy_;
  AttemptWatchdog watchdog_;
  LookupThreads lookups_{kLookupThreads};
  TokenCache tokens_{clock_};
  Mutex poolMutex_;
  std::unordered_map<std::string, std::vector<Connection>> idle_ GUARDED_BY(poolMutex_);
};

// Parses a Retry-After value: delay-seconds or an HTTP-date (relative to now).
std::optional<std::chrono::milliseconds> parseRetryAfter(const std::string& value, TimePoint now);

}  // namespace webhooker
