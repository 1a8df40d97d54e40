// serveOptionsOf: the daemon's options built from its configuration in one
// place — each setting lands where its part reads it, and a value that does
// not parse is refused naming its option and variable, never the value.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "app/config.h"
#include "app/serve_options.h"

namespace {

using webhooker::app::Config;
using webhooker::app::serveOptionsOf;

TEST_CASE("serveOptionsOf puts every setting where its part reads it") {
  Config config;
  config.dataDir = "/srv/hooks";
  config.syncMode = "normal";
  config.flushScope = "filesystem";
  config.nodeId = "node-a";
  config.port = 9090;
  config.jqWorkers = 3;
  config.jqTimeoutMs = 250;
  config.jqMemoryMb = 64;
  config.workers = 5;
  config.maxWorkers = 9;
  config.sweepIntervalMs = 7'000;
  config.headerTimeoutMs = 4'000;
  config.maxBufferedMb = 2;
  config.breakerThreshold = 7;
  config.breakerCooldownMs = 1'500;
  config.trustedProxies = "10.0.0.0/8, 192.168.1.1";
  config.allowNetworks = "172.16.0.0/12";
  config.portalLinkMinutes = 20;
  config.shutdownGraceMs = 3'000;

  const auto built = serveOptionsOf(config);
  REQUIRE(built);
  const auto& o = built.value();
  using std::chrono::milliseconds;
  CHECK(o.dataDir == "/srv/hooks");
  CHECK(o.db.sync == webhooker::SyncMode::kNormal);
  CHECK(o.server.db.sync == webhooker::SyncMode::kNormal);
  CHECK(o.db.flushScope == webhooker::FlushScope::kFileSystem);
  CHECK(o.nodeId == "node-a");
  CHECK(o.server.nodeId == "node-a");
  CHECK(o.server.listenAddress == "127.0.0.1");  // dev's default
  CHECK(o.server.port == 9090);
  CHECK(o.jq.workers == 3);
  CHECK(o.jq.timeout == milliseconds(250));
  CHECK(o.jq.memoryBytes == size_t{64} * 1024 * 1024);
  CHECK(o.server.ingest.routingThreads == 6);  // two per jq worker
  CHECK(o.engine.workers == 5);
  CHECK(o.engine.maxWorkers == 9);
  CHECK(o.engine.sweepInterval == milliseconds(7'000));
  CHECK(o.server.headerTimeout == milliseconds(4'000));
  CHECK(o.server.bodyGrace == milliseconds(4'000));
  CHECK(o.server.maxBufferedBytes == size_t{2} * 1024 * 1024);
  CHECK(o.breakerThreshold == 7);
  CHECK(o.breakerCooldown == milliseconds(1'500));
  CHECK(o.server.trustedProxies.size() == 2);
  CHECK(o.allowNetworks.size() == 1);
  CHECK_FALSE(o.egressProxy);
  CHECK(o.server.portalLinkLifetime == std::chrono::minutes(20));
  CHECK(o.shutdownGrace == milliseconds(3'000));
}

TEST_CASE("serveOptionsOf refuses a value that does not parse, naming its option, not the value") {
  struct Case {
    const char* option;
    const char* variable;
    void (*set)(Config&);
  };
  for (const Case& c : {
           Case{"allow-networks", "WEBHOOKER_ALLOW_NETWORKS",
                [](Config& k) { k.allowNetworks = "10.0.0.0/99"; }},
           Case{"trusted-proxies", "WEBHOOKER_TRUSTED_PROXIES",
                [](Config& k) { k.trustedProxies = "not-a-network"; }},
           Case{"egress-proxy", "WEBHOOKER_EGRESS_PROXY",
                [](Config& k) { k.egressProxy = "https://user:s3cr3t-pw@proxy.example:3128"; }},
       }) {
    CAPTURE(c.option);
    Config config;
    c.set(config);
    const auto built = serveOptionsOf(config);
    REQUIRE_FALSE(built);
    CHECK(built.error().code == "invalid_config");
    CHECK(built.error().message.find(std::string("option=") + c.option + " environment=" +
                                     c.variable + " error=\"") == 0);
    CHECK(built.error().message.find("s3cr3t") == std::string::npos);
  }
}

TEST_CASE("serveOptionsOf keeps a proxy's credentials for the client and shows none") {
  Config config;
  config.egressProxy = "http://user:s3cr3t-pw@proxy.example:3128";
  const auto built = serveOptionsOf(config);
  REQUIRE(built);
  REQUIRE(built->egressProxy);
  CHECK(built->egressProxy->port == 3128);
  CHECK_FALSE(built->egressProxy->authorization.empty());
  CHECK(built->egressProxy->display().find("s3cr3t") == std::string::npos);
}

}  // namespace
