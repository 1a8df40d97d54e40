#include "app/serve_options.h"

#include <fmt/format.h>

#include <utility>

namespace webhooker::app {

namespace {

Error invalidSetting(const char* option, const char* variable, const std::string& why) {
  return makeError(error_code::kInvalidConfig,
                   fmt::format("option={} environment={} error=\"{}\"", option, variable, why));
}

Result<std::vector<Cidr>> networksOf(const std::string& list, const char* option,
                                     const char* variable) {
  auto parsed = Cidr::parseList(list);
  if (!parsed) return invalidSetting(option, variable, parsed.error().message);
  return std::move(parsed.value());
}

}  // namespace

Result<ServeOptions> serveOptionsOf(const Config& config) {
  ServeOptions out;
  auto allowNetworks =
      networksOf(config.allowNetworks, "allow-networks", "WEBHOOKER_ALLOW_NETWORKS");
  if (!allowNetworks) return allowNetworks.error();
  out.allowNetworks = std::move(allowNetworks.value());
  if (!config.egressProxy.empty()) {
    auto proxy = parseProxyUrl(config.egressProxy);
    if (!proxy)
      return invalidSetting("egress-proxy", "WEBHOOKER_EGRESS_PROXY", proxy.error().message);
    out.egressProxy = std::move(proxy.value());
  }
  auto trustedProxies =
      networksOf(config.trustedProxies, "trusted-proxies", "WEBHOOKER_TRUSTED_PROXIES");
  if (!trustedProxies) return trustedProxies.error();

  out.dataDir = config.dataPath();
  out.db = config.dbOptions();
  out.maxOpenEventsDbs = config.maxOpenEventsDbs;
  out.nodeId = config.nodeId;
  out.adminToken = config.adminToken;
  out.breakerThreshold = config.breakerThreshold;
  out.breakerCooldown = std::chrono::milliseconds(config.breakerCooldownMs);

  out.jq.workers = config.jqWorkers;
  out.jq.timeout = std::chrono::milliseconds(config.jqTimeoutMs);
  out.jq.memoryBytes = static_cast<size_t>(config.jqMemoryMb) * 1024 * 1024;

  out.engine.workers = config.workers;
  out.engine.maxWorkers = config.maxWorkers;
  out.engine.sweepInterval = std::chrono::milliseconds(config.sweepIntervalMs);

  server::ServerOptions& s = out.server;
  s.listenAddress = config.listenHost();
  s.nodeId = config.nodeId;
  s.db = out.db;
  s.port = config.port;
  s.threads = config.httpThreads;
  s.ingest.bodyLimit = config.bodyLimit;
  // A routing thread mostly waits for a jq worker's answer: two per worker
  // keep every worker busy.
  s.ingest.routingThreads = 2 * config.jqWorkers;
  s.metricsUsername = config.metricsUsername;
  s.metricsPassword = config.metricsPassword;
  s.headerTimeout = std::chrono::milliseconds(config.headerTimeoutMs);
  s.bodyGrace = s.headerTimeout;
  s.idleTimeout = std::chrono::milliseconds(config.idleTimeoutMs);
  s.stallTimeout = std::chrono::milliseconds(config.stallTimeoutMs);
  s.maxBufferedBytes = config.maxBufferedMb * 1024 * 1024;
  s.maxConnections = config.maxConnections;
  s.maxConnectionsPerAddress = config.maxConnectionsPerAddress;
  s.trustedProxies = std::move(trustedProxies.value());
  s.portalLinkLifetime = std::chrono::minutes(config.portalLinkMinutes);
  s.portalFrameAncestors = config.portalFrameAncestors;

  out.samplerInterval = std::chrono::milliseconds(config.samplerIntervalMs);
  out.pruneInterval = std::chrono::milliseconds(config.pruneIntervalMs);
  out.shutdownGrace = std::chrono::milliseconds(config.shutdownGraceMs);
  return out;
}

}  // namespace webhooker::app
