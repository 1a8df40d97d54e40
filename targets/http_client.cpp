#include "targets/http_client.h"

#include <fmt/format.h>

#include <csignal>
#include <ctime>

#include "base/ascii_case.h"
#include "base/error_codes.h"

namespace webhooker {

namespace {

using std::chrono::milliseconds;

void setTimeouts(httplib::ClientImpl& client, milliseconds timeout) {
  const auto sec = static_cast<time_t>(timeout.count() / 1000);
  const auto usec = static_cast<time_t>((timeout.count() % 1000) * 1000);
  client.set_connection_timeout(sec, usec);
  client.set_read_timeout(sec, usec);
  client.set_write_timeout(sec, usec);
}

OutboundResponse::Failure failureOf(httplib::Error e, bool pastDeadline) {
  using F = OutboundResponse::Failure;
  if (pastDeadline) return F::kTimeout;
  switch (e) {
    case httplib::Error::ConnectionTimeout: return F::kTimeout;
    case httplib::Error::Connection:
    case httplib::Error::Read:
    case httplib::Error::Write: return F::kConnect;
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLLoadingCerts:
    case httplib::Error::SSLServerVerification: return F::kTls;
    default: return F::kOther;
  }
}

// The result row's error text: what happened, in words an operator reads
// (cpp-httplib's own names are single words such as "Read").
std::string describe(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection: return "could not connect to the receiver";
    case httplib::Error::Read:
      return "the receiver closed or reset the connection before a complete response";
    case httplib::Error::Write:
      return "the receiver closed or reset the connection while the request was sent";
    case httplib::Error::SSLConnection: return "TLS handshake with the receiver failed";
    case httplib::Error::SSLLoadingCerts: return "could not load the CA certificates";
    case httplib::Error::SSLServerVerification:
      return "the receiver's TLS certificate did not verify";
    default: return "HTTP client error: " + httplib::to_string(e);
  }
}

}  // namespace

std::optional<milliseconds> parseRetryAfter(const std::string& value, TimePoint now) {
  if (value.empty()) return std::nullopt;
  if (value.find_first_not_of("0123456789") == std::string::npos) {
    if (value.size() > 9) return milliseconds(999'999'999LL * 1000);  // absurd: clamped later
    return milliseconds(std::stoll(value) * 1000);
  }
  std::tm tm{};
  // IMF-fixdate, the form RFC 9110 requires senders to use.
  const char* end = strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end != '\0') return std::nullopt;
  // In seconds: a date like year 9999 is past what a system_clock time
  // point holds (nanoseconds overflow in 2262).
  const int64_t atMs = static_cast<int64_t>(timegm(&tm)) * 1000;
  const int64_t nowMs = std::chrono::duration_cast<milliseconds>(now.time_since_epoch()).count();
  return milliseconds(std::max<int64_t>(atMs - nowMs, 0));
}

HttpClient::HttpClient(const SsrfGuard& guard, const Clock& clock,
                       std::optional<ProxyAddress> proxy)
    : guard_(guard), clock_(clock), proxy_(std::move(proxy)) {
  // OpenSSL writes to the socket with write(2), not send(MSG_NOSIGNAL): a
  // receiver that closes a TLS connection while the request is written (one
  // that refuses our client certificate does, under TLS 1.3) would end the
  // process with SIGPIPE instead of failing the attempt.
  ::signal(SIGPIPE, SIG_IGN);
}

HttpClient::Connection HttpClient::borrow(const std::string& key, const OutboundRequest& request,
                                          const std::string& pinnedAddress) {
  {
    MutexLock lock(poolMutex_);
    auto& idle = idle_[key];
    if (!idle.empty()) {
      Connection c = std::move(idle.back());
      idle.pop_back();
      return c;
    }
  }
  const EgressOptions* egress = request.egress.get();
  const ProxyAddress* proxy = egress && egress->proxy ? &*egress->proxy
                              : proxy_                ? &*proxy_
                                                      : nullptr;
  static const TlsOptions kSystemTls;
  return openEgressConnection(request.url, pinnedAddress, proxy, egress ? egress->tls : kSystemTls);
}

void HttpClient::giveBack(const std::string& key, Connection connection) {
  MutexLock lock(poolMutex_);
  auto& idle = idle_[key];
  if (idle.size() < kMaxIdlePerDestination) idle.push_back(std::move(connection));
}

std::optional<Result<IpAddress>> HttpClient::vetBy(
    const Url& url, std::chrono::steady_clock::time_point deadline) {
  // Literals and loopback names need no lookup: no thread hop for them.
  if (!guard_.resolves(url)) return guard_.vet(url);
  return lookups_.run([&guard = guard_, url] { return guard.vet(url); }, deadline);
}

Result<std::string> HttpClient::bearerToken(const EgressOptions& egress,
                                            std::chrono::steady_clock::time_point deadline,
                                            const std::string& refused) {
  const OAuth2Settings& oauth2 = *egress.oauth2;
  const auto slot = tokens_.slot(oauth2.key);
  if (!refused.empty()) tokens_.drop(*slot, refused);
  // One fetch per target at a time: the attempts waiting here take its token.
  std::lock_guard fetching(slot->fetching);
  if (auto token = tokens_.current(*slot)) return *token;

  OutboundRequest fetch;
  fetch.url = oauth2.tokenUrl;
  fetch.headers = {{"Content-Type", "application/x-www-form-urlencoded"},
                   {"Accept", "application/json"},
                   {"Authorization", tokenRequestAuthorization(oauth2)}};
  fetch.body = tokenRequestBody(oauth2);
  fetch.timeout = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
  if (fetch.timeout < milliseconds(1))
    return makeError(error_code::kUnavailable, "OAuth2: no time left to fetch a token");
  // Through the target's proxy (or the daemon's), with the system's CAs.
  if (egress.proxy) {
    EgressOptions proxyOnly;
    proxyOnly.proxy = egress.proxy;
    fetch.egress = sealEgress(std::move(proxyOnly));
  }
  const OutboundResponse answer = sendOnce(std::move(fetch), kTokenAnswerCap);
  if (answer.failure != OutboundResponse::Failure::kNone)
    return makeError(error_code::kUnavailable,
                     "OAuth2: could not get a token from the token endpoint: " + answer.error);
  TokenAnswer token = readTokenAnswer(answer.status, answer.body);
  if (!token.problem.empty()) return makeError(error_code::kUnavailable, token.problem);
  tokens_.keep(*slot, token.accessToken, token.lifetime);
  return token.accessToken;
}

OutboundResponse HttpClient::send(OutboundRequest request) {
  if (!request.egress || !request.egress->oauth2) return sendOnce(std::move(request));
  using F = OutboundResponse::Failure;
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + request.timeout;
  const auto elapsed = [&] {
    return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
  };
  const auto failed = [&](const Error& e) {
    OutboundResponse out;
    out.failure = F::kAuth;
    out.error = e.message;
    out.duration = elapsed();
    return out;
  };
  const auto withToken = [&](OutboundRequest r, const std::string& token) {
    std::erase_if(r.headers, [](const auto& h) { return equalsIgnoringCase(h.first, "authorization"); });
    r.headers.emplace_back("Authorization", "Bearer " + token);
    r.timeout = std::max(milliseconds(1), std::chrono::duration_cast<milliseconds>(
                                              deadline - std::chrono::steady_clock::now()));
    return r;
  };
  auto token = bearerToken(*request.egress, deadline);
  if (!token) return failed(token.error());
  OutboundResponse out = sendOnce(withToken(request, token.value()));
  if (out.status != 401) {
    out.duration = elapsed();
    return out;
  }
  // The receiver refused the token (revoked, rotated early): one new token,
  // one more try, within the same attempt's time.
  auto fresh = bearerToken(*request.egress, deadline, token.value());
  if (!fresh) return failed(fresh.error());
  out = sendOnce(withToken(std::move(request), fresh.value()));
  out.duration = elapsed();
  return out;
}

OutboundResponse HttpClient::sendOnce(OutboundRequest request, size_t bodyCap) {
  using F = OutboundResponse::Failure;
  const auto started = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
  };
  OutboundResponse out;

  auto vetted = vetBy(request.url, started + request.timeout);
  if (!vetted) {
    out.failure = F::kTimeout;
    out.duration = elapsed();
    out.error = fmt::format("timeout after {} ms resolving {}", out.duration.count(),
                            request.url.host);
    return out;
  }
  if (!*vetted) {
    out.failure = vetted->error().isBlockedDestination() ? F::kBlocked : F::kDns;
    out.error = vetted->error().message;
    out.duration = elapsed();
    return out;
  }
  const std::string pinned = vetted->value().toString();
  // The egress identity keeps targets with other proxies or certificates
  // off each other's connections.
  const std::string key = fmt::format("{}://{}:{}@{}#{}", request.url.scheme, request.url.host,
                                      request.url.port, pinned,
                                      request.egress ? request.egress->identity : "");
  Connection connection = borrow(key, request, pinned);
  if (!connection->notes.setupProblem.empty()) {
    out.failure = F::kTls;
    out.error = connection->notes.setupProblem;
    out.duration = elapsed();
    return out;
  }
  connection->notes.deadline = started + request.timeout;
  connection->notes.proxyProblem.clear();
  connection->notes.tlsProblem.clear();
  httplib::ClientImpl& client = connection->http();
  setTimeouts(client, request.timeout);

  httplib::Request req;
  req.method = request.method;
  req.path = request.url.target;
  for (const auto& [name, value] : request.headers) req.headers.emplace(name, value);
  req.body = std::move(request.body);
  req.response_handler = [&](const httplib::Response& res) {
    out.status = res.status;
    if (res.has_header("Retry-After"))
      out.retryAfter = parseRetryAfter(res.get_header_value("Retry-After"), clock_.now());
    return true;
  };
  // Read the whole response (so the connection can be reused) but keep only
  // the first 4 KiB, and give up once the attempt's total time is spent: a
  // receiver trickling one byte a second must not hold a worker forever.
  req.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
    if (out.body.size() < bodyCap)
      out.body.append(data, std::min(length, bodyCap - out.body.size()));
    return elapsed() < request.timeout;
  };

  const uint64_t ticket = watchdog_.watch(client, started + request.timeout);
  httplib::Result result = client.send(req);
  watchdog_.unwatch(ticket);
  out.duration = elapsed();
  if (!result) {
    const bool pastDeadline = out.duration >= request.timeout;
    const ConnectionNotes& notes = connection->notes;
    out.failure = failureOf(result.error(), pastDeadline);
    out.error = out.failure == F::kTimeout
                    ? fmt::format("timeout after {} ms", out.duration.count())
                    : describe(result.error());
    // What the connection saw says more than cpp-httplib's word for it.
    if (!notes.proxyProblem.empty()) {
      out.failure = pastDeadline ? F::kTimeout : F::kConnect;
      out.error = notes.proxyProblem;
    } else if (!notes.tlsProblem.empty()) {
      out.failure = F::kTls;
      out.error = notes.tlsProblem;
    }
    out.status = 0;
    return out;  // the connection is in an unknown state: drop it
  }
  out.status = result->status;
  giveBack(key, std::move(connection));
  return out;
}

}  // namespace webhooker
