#include "server/http_server.h"

#include <fmt/format.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <thread>

#include "base/secret.h"
#include "server/console.h"
#include "server/json_io.h"

namespace webhooker::server {

namespace {

// The body of an error cpp-httplib answered by itself (no route, a body over
// the payload limit, a malformed request), in our error shape.
void describeBuiltInError(httplib::Response& res) {
  switch (res.status) {
    case 400: return sendError(res, 400, "bad_request", "the request could not be parsed");
    case 404: return sendError(res, 404, "not_found", "no such route");
    case 405: return sendError(res, 405, "method_not_allowed", "method not allowed");
    case 413: return sendError(res, 413, "body_too_large", "the body is larger than the limit");
    case 414: return sendError(res, 414, "uri_too_long", "the request URI is too long");
    default: return sendError(res, res.status, "error", "the request failed");
  }
}

// When the current request started: set before routing, read by the
// logger once the response is written. cpp-httplib handles a request on one
// thread from start to end.
thread_local std::chrono::steady_clock::time_point requestStart;

// Basic auth for /metrics: both parts compared as hashes, in constant time.
bool basicAuthMatches(const std::string& header, const std::string& user,
                      const std::string& password) {
  constexpr std::string_view kBasic = "Basic ";
  if (header.size() <= kBasic.size() || header.compare(0, kBasic.size(), kBasic) != 0) return false;
  const auto decoded = base64Decode(std::string_view(header).substr(kBasic.size()));
  if (!decoded) return false;
  const size_t colon = decoded->find(':');
  if (colon == std::string::npos) return false;
  const bool userOk = constantTimeEquals(sha256Hex(decoded->substr(0, colon)), sha256Hex(user));
  const bool passwordOk =
      constantTimeEquals(sha256Hex(decoded->substr(colon + 1)), sha256Hex(password));
  return userOk && passwordOk;
}

// Refuses, before any body is read, what cpp-httplib would let through or misread:
//  - more than 256 headers or 64 KiB of them (431): it limits each line to
//    8 KiB but not their number, and ingest stores every header;
//  - a transfer coding other than chunked (501, RFC 9112 §6.1): it would
//    read no body at all;
//  - a Content-Length that is not one number, or one sent with
//    Transfer-Encoding (400): it reads a bad one as 0 and the body as the
//    next request; both framings at once is how requests are smuggled.
// True when it answered.
constexpr size_t kMaxHeaderCount = 256;
constexpr size_t kMaxHeaderBytes = 64 * 1024;

bool refusedFraming(const httplib::Request& req, httplib::Response& res) {
  size_t headerBytes = 0;
  for (const auto& [name, value] : req.headers) headerBytes += name.size() + value.size();
  if (req.headers.size() > kMaxHeaderCount || headerBytes > kMaxHeaderBytes) {
    sendError(res, 431, "headers_too_large",
              fmt::format("at most {} headers of {} bytes in all", kMaxHeaderCount,
                          kMaxHeaderBytes));
    return true;
  }
  const size_t codings = req.get_header_value_count("Transfer-Encoding");
  std::string coding = req.get_header_value("Transfer-Encoding");
  std::transform(coding.begin(), coding.end(), coding.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (codings > 1 || (codings == 1 && coding != "chunked")) {
    sendError(res, 501, "not_implemented", "the only transfer coding understood is chunked");
    return true;
  }
  const size_t lengths = req.get_header_value_count("Content-Length");
  const std::string length = req.get_header_value("Content-Length");
  bool lengthValid = lengths == 0 || (codings == 0 && !length.empty() && length.size() <= 18 &&
                                      length.find_first_not_of("0123456789") == std::string::npos);
  for (size_t i = 1; i < lengths; ++i)
    lengthValid = lengthValid && req.get_header_value("Content-Length", i) == length;
  if (!lengthValid) {
    sendError(res, 400, "bad_request",
              "Content-Length must be one valid length, and not sent with Transfer-Encoding");
    return true;
  }
  return false;
}

}  // namespace

HttpServer::HttpServer(ServerOptions options, ServerParts parts)
    : options_(std::move(options)),
      store_(parts.store),
      registry_(parts.registry),
      metrics_(parts.registry),
      auth_(parts.store),
      ingest_(parts.store, parts.eventsDbs, parts.dispatcher, metrics_, options_.ingest),
      admin_(parts.store, parts.eventsDbs, parts.dispatcher, parts.guard, parts.breakers) {
  const int threads = options_.threads > 0 ? options_.threads : 8;
  http_.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // Without TCP_NODELAY small responses wait on Nagle's algorithm: ~300 req/s
  // instead of ~23,000 on loopback.
  http_.set_tcp_nodelay(true);
  // Every answer, API and console alike: a browser must never guess a type
  // for a stored payload or an error body.
  http_.set_default_headers({{"X-Content-Type-Options", "nosniff"}});
  http_.set_payload_max_length(options_.ingest.bodyLimit);
  http_.set_read_timeout(std::chrono::seconds(30));
  http_.set_write_timeout(std::chrono::seconds(30));
  registerRoutes();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::registerRoutes() {
  http_.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request&, httplib::Response& res) {
        if (res.body.empty()) describeBuiltInError(res);
        return httplib::Server::HandlerResponse::Handled;
      }));
  http_.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        spdlog::error("http.handler_failed method={} path={} error=\"{}\"", req.method, req.path, what);
        sendError(res, 500, "internal_error", "internal error");
      });

  http_.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.request(req.path, res.status, std::chrono::steady_clock::now() - requestStart);
  });

  // Runs before any body is read. Authenticates every admin request, so an
  // unknown route says nothing to a caller without the token, and refuses
  // bodies sent anywhere but ingest and the API, so nobody can make us read
  // a large chunked body for nothing.
  http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    requestStart = std::chrono::steady_clock::now();
    if (refusedFraming(req, res)) return httplib::Server::HandlerResponse::Handled;
    const bool ingest = req.path.rfind("/hooks/", 0) == 0;
    const bool api = req.path.rfind("/api/", 0) == 0;
    if (!ingest && !api && req.method != "GET" && req.method != "HEAD") {
      sendError(res, 404, "not_found", "no such route");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!api) return httplib::Server::HandlerResponse::Unhandled;
    if (auth_.allows(req.get_header_value("Authorization")))
      return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("WWW-Authenticate", "Bearer");
    sendError(res, 401, "unauthorized", "a valid admin token is required (Authorization: Bearer)");
    return httplib::Server::HandlerResponse::Handled;
  });

  const std::string hook = R"(/hooks/([^/]+))";
  // Read the body ourselves: stop at the limit whatever the framing
  // (Content-Length or chunked), instead of buffering it all first.
  http_.Post(hook, [this](const httplib::Request& req, httplib::Response& res,
                          const httplib::ContentReader& reader) {
    std::string body;
    bool tooLarge = false;
    const bool complete = reader([&](const char* data, size_t length) {
      if (body.size() + length > options_.ingest.bodyLimit) {
        tooLarge = true;
        return false;
      }
      body.append(data, length);
      return true;
    });
    // cpp-httplib refuses a Content-Length over the limit without calling
    // the receiver at all: that, too, is a body too large.
    if (tooLarge || res.status == 413)
      return sendError(res, 413, "body_too_large",
                       "the body is larger than the limit of " +
                           std::to_string(options_.ingest.bodyLimit) + " bytes");
    if (!complete)
      return sendError(res, 400, "incomplete_body", "the request body could not be read whole");
    ingest_.handle(req, std::move(body), res);
  });
  auto notAllowed = [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Allow", "POST");
    sendError(res, 405, "method_not_allowed", "entrypoints accept POST only");
  };
  http_.Get(hook, notAllowed);
  http_.Put(hook, notAllowed);
  http_.Patch(hook, notAllowed);
  http_.Delete(hook, notAllowed);
  http_.Options(hook, notAllowed);

  http_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    sendJson(res, 200, {{"status", "ok"}});
  });
  http_.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) { readyz(res); });
  http_.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    metrics(req, res);
  });

  admin_.registerRoutes(http_);
  registerConsole(http_);
}

void HttpServer::readyz(httplib::Response& res) {
  if (!ingest_.accepting())
    return sendJson(res, 503, {{"status", "shutting_down"}});
  if (auto ping = store_.ping(); !ping)
    return sendJson(res, 503, {{"status", "storage_unavailable"}});
  sendJson(res, 200, {{"status", "ready"}});
}

void HttpServer::metrics(const httplib::Request& req, httplib::Response& res) {
  if (!options_.metricsUsername.empty() &&
      !basicAuthMatches(req.get_header_value("Authorization"), options_.metricsUsername,
                        options_.metricsPassword)) {
    res.set_header("WWW-Authenticate", "Basic realm=\"webhooker metrics\"");
    return sendError(res, 401, "unauthorized", "metrics require basic auth");
  }
  res.status = 200;
  res.set_content(prometheus::TextSerializer().Serialize(registry_.Collect()),
                  "text/plain; version=0.0.4; charset=utf-8");
}

Result<int> HttpServer::bind() {
  int port = options_.port;
  if (port == 0) {
    port = http_.bind_to_any_port(options_.listenAddress);
    if (port < 0) port = 0;
  } else if (!http_.bind_to_port(options_.listenAddress, port)) {
    port = 0;
  }
  if (port <= 0)
    return makeError("bind_failed", "could not listen on " + options_.listenAddress + ":" +
                                        std::to_string(options_.port));
  return port;
}

void HttpServer::run() {
  running_ = true;
  if (!stopRequested_) http_.listen_after_bind();
  running_ = false;
}

void HttpServer::stopAccepting() { ingest_.setAccepting(false); }

void HttpServer::stop() {
  stopAccepting();
  stopRequested_ = true;
  // If run() is between its check and listening, wait until the server
  // listens so that stop() reaches it.
  while (running_ && !http_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  http_.stop();
}

}  // namespace webhooker::server
