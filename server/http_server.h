// HttpServer: the daemon's one listening socket — ingest (/hooks/...), the
// admin API (/api/v1/...), /metrics, /healthz, /readyz and the web console (/).
//
// Event-driven (docs/decisions.md, *Front door*): one event-loop thread
// reads and writes every connection, so an idle or slow connection costs a
// buffer, not a thread. A request is read whole, within deadlines for the
// whole request, a stall limit between bytes and a cap on what all
// unfinished requests hold (ServerOptions), before any handler sees it; its
// framing is bounded like its head (server/request_parser.h). Ingest runs on
// the loop and waits for its group commit without holding a thread; the
// admin API, console, /metrics and /readyz run on a small worker pool, so a
// slow SQLite call never stalls the loop. Every answer carries
// X-Content-Type-Options: nosniff; every refusal that can be answered is
// answered in the JSON error shape.
//
// Ownership: the parts it is given must outlive it. Threading: run() blocks
// the calling thread (the event loop); stop() and stopAccepting() may be
// called from any thread (a signal watcher), also before run() has started.
// Errors: bind() reports a socket that cannot be bound; nothing else throws.
#pragma once

#include <prometheus/registry.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/ip_address.h"
#include "base/result.h"
#include "engine/dispatcher.h"
#include "engine/operational_events.h"
#include "server/ingest_handler.h"
#include "storage/db_options.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "targets/circuit_breaker.h"
#include "targets/target.h"
#include "net/ssrf_guard.h"

namespace webhooker {
class BacklogSampler;  // engine/backlog_sampler.h
}  // namespace webhooker

namespace webhooker::server {

struct ServerOptions {
  std::string listenAddress = "127.0.0.1";
  std::string nodeId;  // this node's name in a cluster; "" for a single node
  DbOptions db;        // how a move opens the events DBs it copies
  int port = 8080;  // 0: any free port (tests)
  int threads = 8;  // worker pool of the admin API, console, /metrics and /readyz
  IngestOptions ingest;  // its bodyLimit holds for every request
  // Basic auth on /metrics when both are set.
  std::string metricsUsername;
  std::string metricsPassword;

  // Whole-request deadlines and connection caps (docs/security.md).
  // Request line and headers, from the request's first byte (a new
  // connection: from its accept).
  std::chrono::milliseconds headerTimeout{10'000};
  // A keep-alive connection with no request in progress is closed after this.
  std::chrono::milliseconds idleTimeout{10'000};
  // A body may take bodyGrace, and then must keep coming at minBodyRate
  // (bytes a second) on average; an answer must be read as fast.
  std::chrono::milliseconds bodyGrace{10'000};
  size_t minBodyRate = 1024;
  // A request (head or body) with no byte for this long is answered 408.
  std::chrono::milliseconds stallTimeout{5'000};
  // What all unfinished requests may hold in read buffers and bodies. Over
  // it, a new body is refused 503 and the requests silent longest are closed.
  size_t maxBufferedBytes = size_t{64} << 20;
  // A body refused for want of that room is answered (503) only after this,
  // its connection held without reading meanwhile: a flood that reconnects
  // as soon as it is closed is refused at most once per connection per
  // delay, not as fast as it can reopen.
  std::chrono::milliseconds busyRefusalDelay{1'000};
  // Open connections in all and from one peer address; a connection over
  // either is answered 503 and closed at once. Trusted proxies are exempt
  // from the per-address cap: they carry many clients.
  size_t maxConnections = 10'000;
  size_t maxConnectionsPerAddress = 256;
  // Peers whose X-Forwarded-For is believed (server/client_address.h).
  std::vector<Cidr> trustedProxies;
  // How long a portal link's secret works (server/admin_portal.h), and the
  // console's CSP frame-ancestors (server/console.h: checked already).
  std::chrono::minutes portalLinkLifetime{15};
  std::string portalFrameAncestors = "'none'";
};

// What the server works with; owned by the caller.
struct ServerParts {
  MainStore& store;
  EventsDbPool& eventsDbs;
  Dispatcher& dispatcher;
  const SsrfGuard& guard;            // refuses literal internal target URLs at write time
  CircuitBreakers& breakers;         // shown by the admin API, reset on a config change
  prometheus::Registry& registry;    // served on /metrics; the server adds its own series
  // Routing's jq programs and counters (optional: without an evaluator no
  // program can be saved and jq rules match nothing).
  RoutingEvaluator* routing = nullptr;
  RoutingMetrics* routingMetrics = nullptr;
  // Where operational events go; nullptr: the operational webhook cannot be set.
  OperationalEvents* operationalEvents = nullptr;
  // Told about a pull target's acks and nacks (the delivery metrics).
  AttemptObserver* attempts = nullptr;
  // Whose latest counts GET /api/v1/summary answers (nullptr: it answers 503).
  const BacklogSampler* sampler = nullptr;
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, ServerParts parts);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the socket (SO_REUSEADDR, never SO_REUSEPORT: a second daemon on
  // the same port must fail, not share it); returns the port actually bound.
  // Errors name why: "address_in_use", "permission_denied",
  // "address_not_available", "bind_failed" for anything else.
  Result<int> bind();
  // Serves until stop(). Call after a successful bind().
  void run();
  // Ingest answers 503 and /readyz reports not ready from now on.
  void stopAccepting();
  // Closes the listener and every connection; run() returns. Requests in
  // progress get no answer (an ingest parked on its commit is still stored).
  void stop();

  // Every route the server answers, in registration order, each as its
  // method and pattern ("GET", "/api/v1/webhooks/{id}"): what the API's
  // OpenAPI document (server/api_document.h) must describe.
  struct RouteName {
    std::string method;
    std::string pattern;
  };
  std::vector<RouteName> routes() const;

  class Impl;  // http_server.cpp, the only file that includes Asio and Beast

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace webhooker::server
