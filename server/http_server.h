// HttpServer: the daemon's one listening socket — ingest (/hooks/...), the
// admin API (/api/v1/...), /healthz and /readyz.
//
// Ownership: holds references to the stores and the dispatcher, which must
// outlive it. Threading: run() blocks the calling thread and serves on
// cpp-httplib's worker pool; stop() and stopAccepting() may be called from
// any thread (a signal watcher).
#pragma once

#include <httplib.h>

#include <memory>
#include <string>

#include "base/result.h"
#include "engine/dispatcher.h"
#include "server/admin_api.h"
#include "server/admin_token.h"
#include "server/ingest_handler.h"

namespace webhooker::server {

struct ServerOptions {
  std::string listenAddress = "127.0.0.1";
  int port = 8080;  // 0: any free port (tests)
  int threads = 8;
  IngestOptions ingest;
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, MainStore& store, EventsDbPool& eventsDbs,
             Dispatcher& dispatcher);
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

  const ServerOptions options_;
  MainStore& store_;
  const AdminAuth auth_;
  IngestHandler ingest_;
  AdminApi admin_;
  httplib::Server http_;
};

}  // namespace webhooker::server
