// The daemon's configuration: flags override environment variables, which
// override the defaults. `webhooker serve --help` lists every option with its
// variable and default.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

#include "base/result.h"
#include "storage/db_options.h"
#include "storage/events_db_pool.h"

namespace webhooker::app {

struct Config {
  std::string environment = "dev";  // dev | prod
  std::string dataDir;              // "" → dev: $XDG_DATA_HOME/webhooker, prod: /data
  std::string syncMode = "full";    // full | normal
  std::string flushScope = "journal";  // journal | file | filesystem
  size_t maxOpenEventsDbs = 0;     // 0 → sized from the node (EventsDbPool::capacityFor)

  std::string nodeId;               // name in a cluster; "" → a single node
  std::string listenAddress;        // "" → dev: 127.0.0.1, prod: 0.0.0.0
  int port = 8080;
  int httpThreads = 8;              // worker pool of the admin API, console, /metrics
  size_t bodyLimit = 1024 * 1024;
  int64_t headerTimeoutMs = 10'000;  // request line and headers, whole
  int64_t idleTimeoutMs = 10'000;    // keep-alive connection without a request
  int64_t stallTimeoutMs = 5'000;    // a request with no byte for this long
  size_t maxBufferedMb = 64;         // what unfinished requests may hold, in all
  size_t maxConnections = 10'000;
  size_t maxConnectionsPerAddress = 256;
  std::string trustedProxies;       // CIDRs whose X-Forwarded-For is believed
  int64_t portalLinkMinutes = 15;   // how long a portal link's secret works
  std::string portalFrameAncestors = "'none'";  // who may frame the console

  int workers = 8;
  int maxWorkers = 64;
  std::string allowNetworks;        // CIDRs the SSRF guard lets through
  std::string egressProxy;          // http://[user:password@]host:port; holds a secret
  int64_t shutdownGraceMs = 10'000;
  int64_t sweepIntervalMs = 60'000;
  int breakerThreshold = 5;            // consecutive retryable failures that open a breaker
  int64_t breakerCooldownMs = 30'000;  // how long it stays open before one probe
  // Routing's jq programs (routing/jq_sandbox.h): worker processes, the time
  // budget of one evaluation, a worker's address space.
  int jqWorkers = 2;
  int64_t jqTimeoutMs = 100;
  int64_t jqMemoryMb = 512;

  bool debug = false;
  std::string logLevel = "info";    // trace | debug | info | warn | error
  std::string logFormat = "text";   // text | json
  std::string metricsUsername;      // with metricsPassword: basic auth on /metrics
  std::string metricsPassword;
  int64_t samplerIntervalMs = 30'000;
  int64_t pruneIntervalMs = 3'600'000;  // retention and masking pass

  std::optional<std::string> adminToken;  // WEBHOOKER_ADMIN_TOKEN (environment only)

  std::filesystem::path dataPath() const;
  std::string listenHost() const;
  DbOptions dbOptions() const;
};

// Options every command that opens the data folder takes.
void addStorageOptions(CLI::App& command, Config& config);
// Options of `webhooker serve`.
void addServeOptions(CLI::App& command, Config& config);

// Reads what has no flag (the admin token) and checks values that depend on
// each other. Call after parsing.
Result<void> finishConfig(Config& config);

}  // namespace webhooker::app
