// ServeOptions: everything `webhooker serve` runs with, built from the
// configuration in one place (serveOptionsOf), so runServe only wires parts.
// Values that must parse (networks, the egress proxy) are parsed here, before
// anything touches the data folder.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/config.h"
#include "base/ip_address.h"
#include "base/result.h"
#include "engine/engine.h"
#include "routing/jq_sandbox.h"
#include "server/http_server.h"
#include "storage/db_options.h"
#include "targets/egress.h"

namespace webhooker::app {

struct ServeOptions {
  std::filesystem::path dataDir;
  DbOptions db;
  size_t maxOpenEventsDbs = 0;  // 0 → sized from the node
  std::string nodeId;                     // "" → a single node
  std::optional<std::string> adminToken;  // holds a secret

  std::vector<Cidr> allowNetworks;         // the SSRF guard's exceptions
  std::optional<ProxyAddress> egressProxy;  // holds a secret when it has credentials
  int breakerThreshold = 5;
  std::chrono::milliseconds breakerCooldown{30'000};

  JqSandboxOptions jq;
  EngineOptions engine;
  server::ServerOptions server;

  std::chrono::milliseconds samplerInterval{30'000};
  std::chrono::milliseconds pruneInterval{3'600'000};
  std::chrono::milliseconds shutdownGrace{10'000};
};

// The options of `config`, or an invalid_config Error whose message reads
// `option=<flag> environment=<variable> error="<why>"` (it names no
// credential and does not repeat the value).
Result<ServeOptions> serveOptionsOf(const Config& config);

}  // namespace webhooker::app
