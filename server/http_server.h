// HttpServer: the daemon's one listening socket — ingest (/hooks/...), the
// admin API (/api/v1/...), /metrics, /healthz, /readyz and the web console (/).
//
// Ownership: the parts it is given must outlive it. Threading: run() blocks
// the calling thread and serves on cpp-httplib's worker pool; stop() and
// stopAccepting() may be called from any thread (a signal watcher), also
// before run() has started.
#pragma once

#include <httplib.h>
#include <prometheus/registry.h>

#include <atomic>
#include <memory>
#include <string>

#include "base/result.h"
#include "engine/dispatcher.h"
#include "server/admin_api.h"
#include "server/admin_token.h"
#include "server/ingest_handler.h"
#include "server/server_metrics.h"
#include "targets/circuit_breaker.h"
#include "targets/ssrf_guard.h"

namespace webhooker::server {

struct ServerOptions {
  std::string listenAddress = "127.0.0.1";
  int port = 8080;  // 0: any free port (tests)
  int threads = 8;
  IngestOptions ingest;
  // Basic auth on /metrics when both are set.
  std::string metricsUsername;
  std::string metricsPassword;
};

// What the server works with; owned by the caller.
struct ServerParts {
  MainStore& store;
  EventsDbPool& eventsDbs;
  Dispatcher& dispatcher;
  const SsrfGuard& guard;            // refuses literal internal target URLs at write time
  const CircuitBreakers& breakers;   // their states are shown by the admin API
  prometheus::Registry& registry;    // served on /metrics; the server adds its own series
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, ServerParts parts);
  ~HttpServer();

  // Binds the socket; returns the port actually bound.
  Result<int> bind();
  // Serves until stop(). Call after a successful bind().
  void run();
  // Ingest answers 503 and /readyz reports not ready from now on.
  void stopAccepting();
  void stop();

 private:
  void registerRoutes();
  void readyz(httplib::Response& res);
  void metrics(const httplib::Request& req, httplib::Response& res);

  const ServerOptions options_;
  MainStore& store_;
  prometheus::Registry& registry_;
  ServerMetrics metrics_;
  const AdminAuth auth_;
  IngestHandler ingest_;
  AdminApi admin_;
  httplib::Server http_;
  // cpp-httplib's stop() is lost if it comes before listening starts; these
  // make an early stop() stick.
  std::atomic<bool> stopRequested_{false};
  std::atomic<bool> running_{false};
};

}  // namespace webhooker::server
