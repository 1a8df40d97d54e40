#include "app/config.h"

#include "server/console.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace webhooker::app {

std::filesystem::path Config::dataPath() const {
  if (!dataDir.empty()) return dataDir;
  if (environment == "prod") return "/data";
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "webhooker";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".local" / "share" / "webhooker";
  return "data";
}

std::string Config::listenHost() const {
  if (!listenAddress.empty()) return listenAddress;
  return environment == "prod" ? "0.0.0.0" : "127.0.0.1";
}

DbOptions Config::dbOptions() const {
  DbOptions o;
  o.sync = syncMode == "normal" ? SyncMode::kNormal : SyncMode::kFull;
  o.flushScope = flushScope == "filesystem" ? FlushScope::kFileSystem
                 : flushScope == "file"     ? FlushScope::kFile
                                            : FlushScope::kJournal;
  return o;
}

void addStorageOptions(CLI::App& cmd, Config& c) {
  cmd.add_option("--environment", c.environment, "dev or prod; picks the defaults below")
      ->envname("WEBHOOKER_ENVIRONMENT")
      ->check(CLI::IsMember({"dev", "prod"}))
      ->capture_default_str();
  cmd.add_option("--data-dir", c.dataDir,
                 "folder of webhooker.db and the events-<uuid>.db files "
                 "[default: dev $XDG_DATA_HOME/webhooker, prod /data]")
      ->envname("DATA_DIR");
}

void addServeOptions(CLI::App& cmd, Config& c) {
  addStorageOptions(cmd, c);
  // Only the daemon acknowledges events, so only it has a durability choice.
  cmd.add_option("--sync-mode", c.syncMode,
                 "SQLite synchronous mode: full (every acknowledged event survives power "
                 "loss) or normal (survives a crash of webhooker, not of the machine)")
      ->envname("WEBHOOKER_SYNC_MODE")
      ->check(CLI::IsMember({"full", "normal"}))
      ->capture_default_str();
  cmd.add_option("--flush-scope", c.flushScope,
                 "what a commit over many webhooks' files flushes: journal (one write of the "
                 "node's commit journal for all of them), file (each file's WAL) or filesystem "
                 "(one flush of the data folder's file system; for a data folder on a file "
                 "system of its own)")
      ->envname("WEBHOOKER_FLUSH_SCOPE")
      ->check(CLI::IsMember({"journal", "file", "filesystem"}))
      ->capture_default_str();
  cmd.add_option("--node-id", c.nodeId,
                 "this node's name in a cluster (letters, digits, - and _; at most 32): "
                 "GET /api/v1/placement reports it and the data folder keeps it")
      ->envname("WEBHOOKER_NODE_ID")
      ->check(CLI::Validator(
          [](const std::string& name) -> std::string {
            const bool valid = !name.empty() && name.size() <= 32 &&
                               std::all_of(name.begin(), name.end(), [](unsigned char ch) {
                                 return std::isalnum(ch) || ch == '-' || ch == '_';
                               });
            return valid ? "" : "a node id is 1 to 32 letters, digits, - or _";
          },
          "NAME"));
  cmd.add_option("--listen", c.listenAddress,
                 "address to listen on [default: dev 127.0.0.1, prod 0.0.0.0]")
      ->envname("WEBHOOKER_LISTEN_ADDRESS");
  cmd.add_option("--port", c.port, "port of ingest, admin API and health checks")
      ->envname("PORT")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd.add_option("--http-threads", c.httpThreads,
                 "threads that run admin API, console and /metrics requests (connections "
                 "and ingest are served by one event-loop thread)")
      ->envname("WEBHOOKER_HTTP_THREADS")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd.add_option("--body-limit", c.bodyLimit, "largest accepted event body, in bytes")
      ->envname("WEBHOOKER_BODY_LIMIT")
      ->check(CLI::Range(size_t{1}, size_t{64} * 1024 * 1024))
      ->capture_default_str();
  cmd.add_option("--header-timeout-ms", c.headerTimeoutMs,
                 "a request line and its headers must arrive whole within this (else 408); "
                 "a body then gets as long again, and must keep coming at 1 KB/s")
      ->envname("WEBHOOKER_HEADER_TIMEOUT_MS")
      ->check(CLI::Range(int64_t{100}, int64_t{600'000}))
      ->capture_default_str();
  cmd.add_option("--idle-timeout-ms", c.idleTimeoutMs,
                 "a keep-alive connection without a request is closed after this")
      ->envname("WEBHOOKER_IDLE_TIMEOUT_MS")
      ->check(CLI::Range(int64_t{100}, int64_t{600'000}))
      ->capture_default_str();
  cmd.add_option("--stall-timeout-ms", c.stallTimeoutMs,
                 "a request (head or body) from which no byte came for this long is answered "
                 "408, whatever its other deadlines allow")
      ->envname("WEBHOOKER_STALL_TIMEOUT_MS")
      ->check(CLI::Range(int64_t{100}, int64_t{600'000}))
      ->capture_default_str();
  cmd.add_option("--max-buffered-mb", c.maxBufferedMb,
                 "MiB all unfinished requests may hold in read buffers and bodies; over it a new "
                 "body is refused 503 and the requests silent longest are closed")
      ->envname("WEBHOOKER_MAX_BUFFERED_MB")
      ->check(CLI::Range(size_t{1}, size_t{1'048'576}))
      ->capture_default_str();
  cmd.add_option("--max-connections", c.maxConnections,
                 "open connections at most; more are answered 503 and closed at once")
      ->envname("WEBHOOKER_MAX_CONNECTIONS")
      ->check(CLI::Range(size_t{1}, size_t{1'000'000}))
      ->capture_default_str();
  cmd.add_option("--max-connections-per-address", c.maxConnectionsPerAddress,
                 "open connections from one address at most (trusted proxies are exempt)")
      ->envname("WEBHOOKER_MAX_CONNECTIONS_PER_ADDRESS")
      ->check(CLI::Range(size_t{1}, size_t{1'000'000}))
      ->capture_default_str();
  cmd.add_option("--trusted-proxies", c.trustedProxies,
                 "comma-separated CIDRs of reverse proxies: from them only, an event's remote "
                 "address is the right-most untrusted hop of X-Forwarded-For")
      ->envname("WEBHOOKER_TRUSTED_PROXIES");
  cmd.add_option("--portal-link-minutes", c.portalLinkMinutes,
                 "how long a portal link works (it works once)")
      ->envname("WEBHOOKER_PORTAL_LINK_MINUTES")
      ->check(CLI::Range(int64_t{1}, int64_t{7 * 24 * 60}))
      ->capture_default_str();
  cmd.add_option("--portal-frame-ancestors", c.portalFrameAncestors,
                 "origins whose pages may embed the console (CSP frame-ancestors), "
                 "space-separated: 'self', https://app.example.com, ...")
      ->envname("WEBHOOKER_PORTAL_FRAME_ANCESTORS")
      ->capture_default_str();
  cmd.add_option("--max-open-events-dbs", c.maxOpenEventsDbs,
                 "events databases kept open at once (least recently used are closed); "
                 "0: every webhook's when the descriptor limit and memory allow, else 1024")
      ->envname("WEBHOOKER_MAX_OPEN_EVENTS_DBS")
      ->check(CLI::Range(size_t{0}, size_t{100000}))
      ->capture_default_str();
  cmd.add_option("--workers", c.workers, "delivery worker threads")
      ->envname("WEBHOOKER_WORKERS")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd.add_option("--max-workers", c.maxWorkers,
                 "delivery worker threads at most: more are started while slow receivers "
                 "hold every worker and another target has deliveries waiting")
      ->envname("WEBHOOKER_MAX_WORKERS")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd.add_option("--allow-networks", c.allowNetworks,
                 "comma-separated CIDRs deliveries may reach although they are private or "
                 "loopback (e.g. 10.1.0.0/16); everything internal is refused otherwise")
      ->envname("WEBHOOKER_ALLOW_NETWORKS");
  cmd.add_option("--egress-proxy", c.egressProxy,
                 "forward proxy every delivery leaves through (http://[user:password@]host:port; "
                 "a target's config.proxy wins): webhooker vets the destination and asks the "
                 "proxy to CONNECT to the vetted address (docs/egress.md)")
      ->envname("WEBHOOKER_EGRESS_PROXY");
  cmd.add_option("--shutdown-grace-ms", c.shutdownGraceMs,
                 "on SIGTERM/SIGINT, how long in-flight attempts may take to finish")
      ->envname("WEBHOOKER_SHUTDOWN_GRACE_MS")
      ->check(CLI::Range(int64_t{0}, int64_t{600'000}))
      ->capture_default_str();
  cmd.add_option("--sweep-interval-ms", c.sweepIntervalMs,
                 "how often waiting deliveries that nothing holds in memory are re-queued")
      ->envname("WEBHOOKER_SWEEP_INTERVAL_MS")
      ->check(CLI::Range(int64_t{100}, int64_t{3'600'000}))
      ->capture_default_str();
  cmd.add_option("--breaker-threshold", c.breakerThreshold,
                 "consecutive retryable failures that open a target's circuit breaker")
      ->envname("WEBHOOKER_BREAKER_THRESHOLD")
      ->check(CLI::Range(1, 10'000))
      ->capture_default_str();
  cmd.add_option("--breaker-cooldown-ms", c.breakerCooldownMs,
                 "how long an open circuit breaker waits before it lets one probe through")
      ->envname("WEBHOOKER_BREAKER_COOLDOWN_MS")
      ->check(CLI::Range(int64_t{10}, int64_t{3'600'000}))
      ->capture_default_str();
  cmd.add_option("--jq-workers", c.jqWorkers,
                 "worker processes that run routing's jq programs (event types, filters, "
                 "transforms)")
      ->envname("WEBHOOKER_JQ_WORKERS")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd.add_option("--jq-timeout-ms", c.jqTimeoutMs,
                 "time budget of one jq evaluation; past it the event or delivery fails")
      ->envname("WEBHOOKER_JQ_TIMEOUT_MS")
      ->check(CLI::Range(int64_t{10}, int64_t{10'000}))
      ->capture_default_str();
  cmd.add_option("--jq-memory-mb", c.jqMemoryMb,
                 "address space of a jq worker process, in MiB")
      ->envname("WEBHOOKER_JQ_MEMORY_MB")
      ->check(CLI::Range(int64_t{64}, int64_t{16'384}))
      ->capture_default_str();
  cmd.add_flag("--debug", c.debug, "log at debug level")->envname("DEBUG");
  // "warning" is the name each line carries; "warn" is spdlog's short one.
  cmd.add_option("--log-level", c.logLevel, "trace, debug, info, warning (or warn) or error")
      ->envname("WEBHOOKER_LOG_LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warning", "warn", "error"}))
      ->capture_default_str();
  cmd.add_option("--log-format", c.logFormat, "text, or json for one JSON object per line")
      ->envname("WEBHOOKER_LOG_FORMAT")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd.add_option("--metrics-username", c.metricsUsername,
                 "with METRICS_PASSWORD, require basic auth on /metrics")
      ->envname("METRICS_USERNAME");
  cmd.add_option("--sampler-interval-ms", c.samplerIntervalMs,
                 "how often the pending/retrying gauges are recounted from the databases")
      ->envname("WEBHOOKER_SAMPLER_INTERVAL_MS")
      ->check(CLI::Range(int64_t{100}, int64_t{3'600'000}))
      ->capture_default_str();
  cmd.add_option("--prune-interval-ms", c.pruneIntervalMs,
                 "how often old events are deleted (retention_days, max_events), finished "
                 "bodies masked (mask_pointers) and the space given back")
      ->envname("WEBHOOKER_PRUNE_INTERVAL_MS")
      ->check(CLI::Range(int64_t{100}, int64_t{604'800'000}))
      ->capture_default_str();
  cmd.footer(
      "Environment only:\n"
      "  WEBHOOKER_ADMIN_TOKEN   admin API token to use instead of a generated one\n"
      "                          (at least 16 characters; stored hashed)\n"
      "  METRICS_PASSWORD        password for /metrics basic auth (with --metrics-username)\n"
      "The management commands (webhooks, targets, ...) read that token from\n"
      "WEBHOOKER_TOKEN and the daemon's address from WEBHOOKER_URL.");
}

Result<void> finishConfig(Config& c) {
  if (const char* token = std::getenv("WEBHOOKER_ADMIN_TOKEN"); token && *token) {
    c.adminToken = token;
    if (c.adminToken->size() < 16)
      return makeError(error_code::kInvalidConfig, "WEBHOOKER_ADMIN_TOKEN must be at least 16 characters");
  }
  if (const char* password = std::getenv("METRICS_PASSWORD"); password) c.metricsPassword = password;
  if (c.metricsUsername.empty() != c.metricsPassword.empty())
    return makeError(error_code::kInvalidConfig,
                     "METRICS_USERNAME and METRICS_PASSWORD must be set together");
  if (c.maxBufferedMb * 1024 * 1024 < c.bodyLimit)
    return makeError(error_code::kInvalidConfig,
                     "--max-buffered-mb must hold at least one body of --body-limit");
  auto ancestors = server::checkFrameAncestors(c.portalFrameAncestors);
  if (!ancestors) return ancestors.error();
  c.portalFrameAncestors = ancestors.value();
  if (c.debug && c.logLevel == "info") c.logLevel = "debug";
  return {};
}

}  // namespace webhooker::app
