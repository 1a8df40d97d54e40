// A target's own TLS: a private CA bundle and a client certificate, against
// nginx and `openssl s_server` started by the test with certificates the
// openssl CLI made (tests/support/tls_servers.h). Delivered with the bundle,
// refused without it; delivered with the right client certificate, refused
// with a TLS reason with a wrong one; a certificate that is wrong, expired
// or not the key's is refused when the target is written. Skips (exit 77)
// where nginx or openssl is missing.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/url.h"
#include "net/ssrf_guard.h"
#include "targets/delivery_config.h"
#include "targets/http_client.h"
#include "targets/target_config.h"
#include "tests/support/contains.h"
#include "tests/support/engine_harness.h"
#include "tests/support/static_resolver.h"
#include "tests/support/tls_servers.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using F = OutboundResponse::Failure;

// One set of certificates and one nginx for the whole file.
const TestPki& pki() {
  static TestPki instance;
  return instance;
}
NginxTls& nginx() {
  static NginxTls instance(pki());
  return instance;
}

std::shared_ptr<const EgressOptions> tls(const std::string& ca, const std::string& cert = "",
                                         const std::string& key = "", bool caOnly = false) {
  EgressOptions options;
  options.tls.caBundle = ca.empty() ? "" : pki().pem(ca);
  options.tls.caBundleOnly = caOnly;
  options.tls.clientCert = cert.empty() ? "" : pki().pem(cert);
  options.tls.clientKey = key.empty() ? "" : pki().pem(key);
  return sealEgress(std::move(options));
}

struct Client {
  StaticResolver dns;
  std::unique_ptr<SsrfGuard> guard;
  SystemClock clock;
  std::unique_ptr<HttpClient> http;
  Client() {
    dns.set("receiver.test", {"127.0.0.1"});
    dns.set("other.test", {"127.0.0.1"});
    guard = std::make_unique<SsrfGuard>(dns, Cidr::parseList("127.0.0.1/32").value());
    http = std::make_unique<HttpClient>(*guard, clock);
  }
  OutboundResponse post(const std::string& url, std::shared_ptr<const EgressOptions> egress) {
    OutboundRequest request;
    request.url = parseHttpUrl(url).value();
    request.body = "{}";
    request.timeout = 5s;
    request.egress = std::move(egress);
    return http->send(std::move(request));
  }
};

std::string at(const std::string& host, int port, const std::string& path = "/") {
  return "https://" + host + ":" + std::to_string(port) + path;
}

TEST_CASE("a private CA: delivered with the bundle, refused with a TLS reason without it") {
  Client client;
  const int port = nginx().openPort();
  const OutboundResponse with = client.post(at("receiver.test", port, "/with-ca"), tls("server-ca.pem"));
  CHECK(with.error == "");
  CHECK(with.status == 200);
  CHECK(eventuallyLogged(nginx(), "sni=receiver.test client=\"-\" POST /with-ca host=receiver.test 200"));

  const OutboundResponse without = client.post(at("receiver.test", port, "/without"), nullptr);
  CHECK(without.failure == F::kTls);
  CHECK(without.status == 0);
  CHECK(contains(without.error, "TLS: the receiver's certificate did not verify: unable to get local issuer certificate"));
  // Replacing the system store works the same for this private receiver.
  const OutboundResponse only =
      client.post(at("receiver.test", port, "/only"), tls("server-ca.pem", "", "", true));
  CHECK(only.status == 200);
  // The wrong CA is no CA.
  const OutboundResponse wrong = client.post(at("receiver.test", port), tls("client-ca.pem"));
  CHECK(wrong.failure == F::kTls);
  CHECK(!contains(nginx().accessLog(), "/without"));
}

TEST_CASE("the bundle vouches for the certificate, not for another name on it") {
  Client client;
  const OutboundResponse response =
      client.post(at("other.test", nginx().openPort()), tls("server-ca.pem"));
  CHECK(response.failure == F::kTls);
  CHECK(response.error == "TLS: the receiver's certificate did not verify: hostname mismatch");
  // Its address is on the certificate too: an address URL verifies against it.
  CHECK(client.post(at("127.0.0.1", nginx().openPort()), tls("server-ca.pem")).status == 200);
}

TEST_CASE("mutual TLS: the receiver sees the client certificate; a stranger's ends in a TLS alert") {
  Client client;
  const OutboundResponse right = client.post(at("receiver.test", nginx().mutualPort(), "/mtls"),
                                             tls("server-ca.pem", "client.pem", "client.key"));
  CHECK(right.error == "");
  CHECK(right.status == 200);
  CHECK(eventuallyLogged(nginx(), "client=\"CN=webhooker-client\" POST /mtls"));

  SServer strict(pki());
  const OutboundResponse stranger = client.post(at("receiver.test", strict.port()),
                                                tls("server-ca.pem", "stranger.pem", "stranger.key"));
  CHECK(stranger.failure == F::kTls);
  CHECK(stranger.status == 0);
  CHECK(contains(stranger.error, "TLS: the receiver ended the handshake with the alert"));
  const OutboundResponse none = client.post(at("receiver.test", strict.port()), tls("server-ca.pem"));
  CHECK(none.failure == F::kTls);
  CHECK(contains(none.error, "TLS: the receiver ended the handshake with the alert"));
}

TEST_CASE("a wrong client certificate dead-letters the delivery with tls_failed and its TLS reason") {
  SServer strict(pki());
  EngineHarness harness;
  harness.resolver().set("receiver.test", {"127.0.0.1"});
  const Hook hook = harness.createWebhook("tls");
  const json extra = {{"tls",
                       {{"ca_bundle", pki().pem("server-ca.pem")},
                        {"client_cert", pki().pem("stranger.pem")},
                        {"client_key", pki().pem("stranger.key")}}}};
  const TargetRecord target = harness.createHttpTarget(
      hook.webhookId, at("receiver.test", strict.port()), retryPolicy(1, 100), 4, 5000, extra);
  const std::string eventId = harness.post(hook.entrypointId, "{\"order\":7}");
  const DeliveryRef ref = harness.deliveryOf(hook.webhookId, eventId, target.id);
  REQUIRE(harness.waitForStatus(ref, "failed", 10s));
  CHECK(harness.delivery(ref).failureReason == std::optional<std::string>("tls_failed"));
  const auto rows = harness.resultRows(ref);
  REQUIRE(rows.size() == 2);
  for (const ResultRow& row : rows) {
    CHECK(!row.statusCode.has_value());
    CHECK(contains(row.error.value_or(""), "TLS: the receiver ended the handshake with the alert"));
  }
}

TEST_CASE("TLS settings are checked when the target is written, and the secrets never shown") {
  const auto config = [](json tlsFields, const std::string& url = "https://receiver.test/") {
    return json{{"url", url}, {"tls", std::move(tlsFields)}};
  };
  const auto refusal = [](const json& c) {
    const auto r = validateTargetConfig(webhooker::TargetType::kHttp, c);
    return r.ok() ? std::string("accepted") : r.error().message;
  };
  const std::string cert = pki().pem("client.pem");
  const std::string key = pki().pem("client.key");
  CHECK(refusal(config({{"client_cert", cert}, {"client_key", key},
                        {"ca_bundle", pki().pem("server-ca.pem")}})) == "accepted");
  CHECK(contains(refusal(config({{"client_cert", pki().pem("expired.pem")},
                                 {"client_key", pki().pem("expired.key")}})),
                 "config.tls.client_cert expired on Jan  2 00:00:00 2020 GMT"));
  CHECK(refusal(config({{"client_cert", cert}, {"client_key", pki().pem("stranger.key")}})) ==
        "config.tls.client_key does not belong to config.tls.client_cert");
  CHECK(refusal(config({{"client_cert", cert}})) ==
        "config.tls.client_cert and config.tls.client_key go together");
  CHECK(refusal(config({{"client_cert", "not a certificate"}, {"client_key", key}})) ==
        "config.tls.client_cert holds no PEM certificate");
  CHECK(refusal(config({{"client_cert", cert}, {"client_key", cert}})) ==
        "config.tls.client_key is not an unencrypted PEM private key");
  CHECK(refusal(config({{"ca_bundle", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}})) ==
        "config.tls.ca_bundle holds no PEM certificate");
  CHECK(refusal(config({{"ca_bundle_only", true}})) == "config.tls.ca_bundle_only needs a ca_bundle");
  CHECK(refusal(config({{"ca_file", "/etc/ssl/x.pem"}})) == "config.tls.ca_file is not a TLS setting");
  CHECK(refusal(config({{"ca_bundle", pki().pem("server-ca.pem")}}, "http://receiver.test/")) ==
        "config.tls needs an https:// url");
  // No error message repeats the key.
  CHECK(!contains(refusal(config({{"client_cert", cert}, {"client_key", pki().pem("stranger.key")}})),
                  "PRIVATE KEY"));

  const json shown = redactTargetConfig(
      webhooker::TargetType::kHttp, config({{"client_cert", cert}, {"client_key", key}, {"ca_bundle", pki().pem("server-ca.pem")}}));
  CHECK(shown["tls"]["client_cert"] == "[redacted]");
  CHECK(shown["tls"]["client_key"] == "[redacted]");
  CHECK(shown["tls"]["ca_bundle"] == pki().pem("server-ca.pem"));  // public: shown to check
}

}  // namespace
}  // namespace webhooker::testing
