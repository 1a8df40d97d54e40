#include "server/http_server.h"

#include <spdlog/spdlog.h>

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

}  // namespace

HttpServer::HttpServer(ServerOptions options, MainStore& store, EventsDbPool& eventsDbs,
                       Dispatcher& dispatcher)
    : options_(std::move(options)),
      store_(store),
      auth_(store),
      ingest_(store, eventsDbs, dispatcher, options_.ingest),
      admin_(store, eventsDbs, dispatcher) {
  const int threads = options_.threads > 0 ? options_.threads : 8;
  http_.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // Without TCP_NODELAY small responses wait on Nagle's algorithm: ~300 req/s
  // instead of ~23,000 on loopback.
  http_.set_tcp_nodelay(true);
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
        spdlog::error("http.handler_failed method={} path={} error={}", req.method, req.path, what);
        sendError(res, 500, "internal_error", "internal error");
      });

  // Authenticate every admin request before routing, so an unknown route
  // says nothing to a caller without the token.
  http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (req.path.rfind("/api/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    if (auth_.allows(req.get_header_value("Authorization")))
      return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("WWW-Authenticate", "Bearer");
    sendError(res, 401, "unauthorized", "a valid admin token is required (Authorization: Bearer)");
    return httplib::Server::HandlerResponse::Handled;
  });

  const std::string hook = R"(/hooks/([^/]+))";
  http_.Post(hook, [this](const httplib::Request& req, httplib::Response& res) {
    ingest_.handle(req, res);
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

  admin_.registerRoutes(http_);
}

void HttpServer::readyz(httplib::Response& res) {
  if (!ingest_.accepting())
    return sendJson(res, 503, {{"status", "shutting_down"}});
  if (auto ping = store_.ping(); !ping)
    return sendJson(res, 503, {{"status", "storage_unavailable"}});
  sendJson(res, 200, {{"status", "ready"}});
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

void HttpServer::run() { http_.listen_after_bind(); }

void HttpServer::stopAccepting() { ingest_.setAccepting(false); }

void HttpServer::stop() {
  stopAccepting();
  http_.stop();
}

}  // namespace webhooker::server
