#include "targets/http_client.h"

#include <fmt/format.h>

#include <ctime>

namespace webhooker {

namespace {

using std::chrono::milliseconds;

void setTimeouts(httplib::Client& client, milliseconds timeout) {
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

std::string hostForUrl(const Url& url) {
  return url.ipv6Literal ? "[" + url.host + "]" : url.host;
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

HttpClient::HttpClient(const SsrfGuard& guard, const Clock& clock) : guard_(guard), clock_(clock) {}

HttpClient::Connection HttpClient::borrow(const std::string& key, const Url& url,
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
  auto client = std::make_unique<httplib::Client>(
      fmt::format("{}://{}:{}", url.scheme, hostForUrl(url), url.port));
  // Connect to the address the guard vetted, whatever DNS says now.
  client->set_hostname_addr_map({{url.host, pinnedAddress}});
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);
  client->set_follow_location(false);
  client->set_decompress(false);  // a compressed response body is stored as sent
  return client;
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

OutboundResponse HttpClient::send(OutboundRequest request) {
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
  const std::string key =
      fmt::format("{}://{}:{}@{}", request.url.scheme, request.url.host, request.url.port, pinned);
  Connection client = borrow(key, request.url, pinned);
  setTimeouts(*client, request.timeout);

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
    if (out.body.size() < kResponseBodyCap)
      out.body.append(data, std::min(length, kResponseBodyCap - out.body.size()));
    return elapsed() < request.timeout;
  };

  const uint64_t ticket = watchdog_.watch(*client, started + request.timeout);
  httplib::Result result = client->send(req);
  watchdog_.unwatch(ticket);
  out.duration = elapsed();
  if (!result) {
    const bool pastDeadline = out.duration >= request.timeout;
    out.failure = failureOf(result.error(), pastDeadline);
    out.error = out.failure == F::kTimeout
                    ? fmt::format("timeout after {} ms", out.duration.count())
                    : describe(result.error());
    out.status = 0;
    return out;  // the connection is in an unknown state: drop it
  }
  out.status = result->status;
  giveBack(key, std::move(client));
  return out;
}

}  // namespace webhooker
