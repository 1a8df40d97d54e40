// Egress through a real forward proxy: Debian's tinyproxy, run from the
// repo's config (packaging/egress/tinyproxy.conf), on loopback. Deliveries
// arrive through it with the name kept in Host while the proxy is asked to
// CONNECT to the vetted address; the SSRF guard's hostile table is refused
// exactly as without a proxy (and the proxy never hears of it); the proxy's
// credentials are used, checked and never shown. Skips (exit 77) where
// tinyproxy is not installed.
#include <doctest/doctest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/url.h"
#include "net/ssrf_guard.h"
#include "targets/http_client.h"
#include "tests/support/contains.h"
#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/eventually.h"
#include "tests/support/forward_proxy.h"
#include "tests/support/hostile_destinations.h"
#include "tests/support/receiver.h"
#include "tests/support/static_resolver.h"
#include "tests/support/tls_servers.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr const char* kProxyUser = "webhooker";
constexpr const char* kProxyPassword = "pr0xy-Secret-7f3a";

// One tinyproxy for the whole file.
ForwardProxy& proxy() {
  static ForwardProxy instance(kProxyUser, kProxyPassword);
  return instance;
}

ProxyAddress proxyAddress(const std::string& password = kProxyPassword) {
  return parseProxyUrl(proxy().url(kProxyUser, password)).value();
}

std::vector<Cidr> loopbackAllowed() { return Cidr::parseList("127.0.0.1/32").value(); }

OutboundRequest post(const std::string& url, const std::string& body = "{\"n\":1}") {
  OutboundRequest request;
  request.url = parseHttpUrl(url).value();
  request.body = body;
  request.headers = {{"Content-Type", "application/json"}};
  request.timeout = 5s;
  return request;
}

size_t countOf(const std::vector<std::string>& lines, const std::string& line) {
  return static_cast<size_t>(std::count(lines.begin(), lines.end(), line));
}

TEST_CASE("a plain-http delivery goes through the proxy as CONNECT to the vetted address, Host keeps the name") {
  Receiver receiver;
  StaticResolver dns;
  dns.set("receiver.test", {"127.0.0.1"});
  const SsrfGuard guard(dns, loopbackAllowed());
  const SystemClock clock;
  HttpClient client(guard, clock, proxyAddress());
  const std::string connect = "CONNECT 127.0.0.1:" + std::to_string(receiver.port()) + " HTTP/1.1";
  const size_t before = countOf(proxy().requestLines(), connect);

  const auto url = "http://receiver.test:" + std::to_string(receiver.port()) + "/hook?x=1";
  const OutboundResponse first = client.send(post(url, "{\"n\":1}"));
  const OutboundResponse second = client.send(post(url, "{\"n\":2}"));
  CHECK(first.error == "");
  CHECK(first.status == 200);
  CHECK(second.status == 200);
  REQUIRE(receiver.waitForRequests(2, 5s));
  const auto requests = receiver.requests();
  CHECK(requests[0].header("Host") == "receiver.test:" + std::to_string(receiver.port()));
  CHECK(requests[0].path == "/hook");
  CHECK(requests[1].body == "{\"n\":2}");
  // Each tunnel asked for the address the guard vetted, never the name (the
  // receiver closes its connections after one request: two tunnels).
  const auto lines = proxy().requestLines();
  CHECK(countOf(lines, connect) == before + 2);
  for (const std::string& line : lines) {
    CAPTURE(line);
    CHECK(line.find("receiver.test") == std::string::npos);
    CHECK(line.rfind("CONNECT ", 0) == 0);  // never an absolute-form GET/POST the proxy resolves
  }
  CHECK(proxy().log().find(kProxyPassword) == std::string::npos);
}

TEST_CASE("https through the proxy: CONNECT to the address, SNI and Host keep the name, the client certificate goes along") {
  const TestPki pki;
  NginxTls nginx(pki);
  StaticResolver dns;
  dns.set("receiver.test", {"127.0.0.1"});
  const SsrfGuard guard(dns, loopbackAllowed());
  const SystemClock clock;
  HttpClient client(guard, clock);  // no daemon proxy: the target's own
  EgressOptions options;
  options.proxy = proxyAddress();
  options.tls.caBundle = pki.pem("server-ca.pem");
  options.tls.clientCert = pki.pem("client.pem");
  options.tls.clientKey = pki.pem("client.key");
  OutboundRequest request = post("https://receiver.test:" + std::to_string(nginx.mutualPort()) + "/tunnelled");
  request.egress = sealEgress(std::move(options));
  const OutboundResponse response = client.send(std::move(request));
  CHECK(response.error == "");
  CHECK(response.status == 200);
  CHECK(eventuallyLogged(nginx, "sni=receiver.test client=\"CN=webhooker-client\" POST /tunnelled "
                                    "host=receiver.test 200"));
  CHECK(countOf(proxy().requestLines(),
                "CONNECT 127.0.0.1:" + std::to_string(nginx.mutualPort()) + " HTTP/1.1") == 1);
}

TEST_CASE("with a proxy set, every hostile destination is still refused and the proxy hears nothing") {
  StaticResolver dns;
  addHostileNames(dns);
  const SsrfGuard guard(dns, {});
  const SystemClock clock;
  HttpClient client(guard, clock, proxyAddress());
  const size_t before = proxy().requestLines().size();
  for (const Hostile& h : kHostile) {
    CAPTURE(h.url);
    OutboundRequest request = post(std::string(h.url));
    request.timeout = 2s;
    const OutboundResponse response = client.send(std::move(request));
    CHECK(response.failure == OutboundResponse::Failure::kBlocked);
    CHECK(response.status == 0);
  }
  CHECK(proxy().requestLines().size() == before);
}

TEST_CASE("wrong proxy credentials fail the attempt with the proxy's answer, naming no password") {
  Receiver receiver;
  StaticResolver dns;
  const SsrfGuard guard(dns, loopbackAllowed());
  const SystemClock clock;
  HttpClient client(guard, clock, proxyAddress("not-the-password"));
  const OutboundResponse response =
      client.send(post("http://127.0.0.1:" + std::to_string(receiver.port()) + "/"));
  CHECK(response.failure == OutboundResponse::Failure::kConnect);
  CHECK(response.status == 0);
  CHECK(contains(response.error, "refused CONNECT 127.0.0.1:" + std::to_string(receiver.port())));
  CAPTURE(response.error);  // tinyproxy answers 401, squid 407
  CHECK(contains(response.error, "(it refused the proxy URL's credentials)"));
  CHECK(response.error.find("not-the-password") == std::string::npos);
  CHECK(receiver.requestCount() == 0);
}

TEST_CASE("an unreachable proxy is a connection failure that names the proxy") {
  Receiver receiver;
  StaticResolver dns;
  const SsrfGuard guard(dns, loopbackAllowed());
  const SystemClock clock;
  const int closedPort = freeLoopbackPort();
  HttpClient client(guard, clock,
                    parseProxyUrl("http://u:p@127.0.0.1:" + std::to_string(closedPort)).value());
  const OutboundResponse response =
      client.send(post("http://127.0.0.1:" + std::to_string(receiver.port()) + "/"));
  CHECK(response.failure == OutboundResponse::Failure::kConnect);
  CHECK(contains(response.error, "could not connect to the egress proxy 127.0.0.1:" + std::to_string(closedPort)));
  CHECK(receiver.requestCount() == 0);
}

TEST_CASE("--egress-proxy: the daemon delivers through the proxy; its password is in no log or answer") {
  Receiver receiver;
  TempDir dir;
  DaemonOptions options;
  options.env = {DaemonApi::adminTokenEnv(), "WEBHOOKER_ALLOW_NETWORKS=127.0.0.0/8,::1/128",
                 "WEBHOOKER_EGRESS_PROXY=" + proxy().url(kProxyUser, kProxyPassword)};
  DaemonProcess daemon(dir.path(), options);
  DaemonApi api(daemon.url());
  const json webhook = api.createWebhook("egress");
  // A target of its own proxy (the same tinyproxy under another spelling)
  // shows that proxy without its credentials.
  const json target = api.createTarget(
      webhook["id"], {{"name", "through-proxy"},
                      {"type", "http"},
                      {"config",
                       {{"url", "http://localhost:" + std::to_string(receiver.port()) + "/in"},
                        {"proxy", "http://" + std::string(kProxyUser) + ":" + kProxyPassword +
                                      "@localhost:" + std::to_string(proxy().port())}}}});
  CHECK(target["config"]["proxy"] ==
        "http://[redacted]@localhost:" + std::to_string(proxy().port()));
  const std::string connect = "CONNECT 127.0.0.1:" + std::to_string(receiver.port()) + " HTTP/1.1";
  auto posted = api.sender().Post(DaemonApi::hookPath(webhook), "{\"order\":1}", "application/json");
  REQUIRE(posted);
  CHECK(posted->status == 200);
  REQUIRE(receiver.waitForRequests(1, 10s));
  CHECK(receiver.requests()[0].header("Host") == "localhost:" + std::to_string(receiver.port()));
  CHECK(countOf(proxy().requestLines(), connect) >= 1);

  auto shown = api.admin().Get("/api/v1/webhooks/" + webhook["id"].get<std::string>() + "/targets");
  REQUIRE(shown);
  CHECK(shown->body.find(kProxyPassword) == std::string::npos);
  CHECK(daemon.stop() == 0);
  CHECK(daemon.stderrText().find(kProxyPassword) == std::string::npos);
  CHECK(contains(daemon.stderrText(), "proxy=127.0.0.1:" + std::to_string(proxy().port())));
}

TEST_CASE("a malformed --egress-proxy stops the daemon with exit 2, repeating no credential") {
  TempDir dir;
  const auto r = runWebhooker({"serve", "--port", "0", "--data-dir", dir.path().string()},
                              {"WEBHOOKER_EGRESS_PROXY=https://user:Hunter22@proxy.internal:3128"});
  CHECK(r.exitCode == 2);
  CHECK(contains(r.err, "egress-proxy"));
  CHECK(r.err.find("Hunter22") == std::string::npos);
}

}  // namespace
}  // namespace webhooker::testing
