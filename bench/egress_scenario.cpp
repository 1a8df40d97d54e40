// egress: what a client certificate and a forward proxy cost a delivery,
// beside plain https to the same nginx (a private CA, no client
// certificate), all through the daemon's HttpClient (SSRF guard, pinning,
// pooled keep-alive connections) with the daemon's worker count of threads.
// The receivers and the proxy are the egress suite's: nginx with
// certificates the openssl CLI makes, and tinyproxy from the repo's config
// (tests/support/tls_servers.h, forward_proxy.h). No goal: the figures say
// what each costs. Skipped where nginx, openssl or tinyproxy is missing.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "net/resolver.h"
#include "net/ssrf_guard.h"
#include "bench/scenarios.h"
#include "targets/http_client.h"
#include "tests/support/forward_proxy.h"
#include "tests/support/tls_servers.h"

namespace webhooker::bench {

namespace {

bool installed(const char* a, const char* b) { return ::access(a, X_OK) == 0 || ::access(b, X_OK) == 0; }

// Sends/s of `n` POSTs over `threads` threads; 0 if any failed.
double sendRate(HttpClient& client, const std::string& url,
                const std::shared_ptr<const EgressOptions>& egress, size_t n, int threads,
                const std::string& body) {
  std::atomic<size_t> next{0};
  std::atomic<size_t> failed{0};
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      while (next++ < n) {
        OutboundRequest request;
        request.url = parseHttpUrl(url).value();
        request.body = body;
        request.headers = {{"Content-Type", "application/json"}};
        request.egress = egress;
        if (client.send(std::move(request)).status != 200) ++failed;
      }
    });
  for (auto& w : workers) w.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return failed == 0 ? static_cast<double>(n) / seconds : 0;
}

}  // namespace

void runEgress(const BenchConfig& config, Report& report) {
  if (!installed("/usr/sbin/nginx", "/usr/bin/nginx") || !installed("/usr/bin/openssl", "/usr/bin/openssl") ||
      !installed("/usr/bin/tinyproxy", "/usr/sbin/tinyproxy")) {
    std::cerr << " (nginx, openssl or tinyproxy missing: skipped)";
    return;
  }
  const testing::TestPki pki;
  testing::NginxTls nginx(pki);
  testing::ForwardProxy proxy("bench", "bench-password");
  SystemResolver resolver;
  const SsrfGuard guard(resolver, Cidr::parseList("127.0.0.1/32").value());
  const SystemClock clock;
  HttpClient client(guard, clock);

  const auto egress = [&](bool mtls, bool proxied) {
    EgressOptions options;
    options.tls.caBundle = pki.pem("server-ca.pem");
    if (mtls) {
      options.tls.clientCert = pki.pem("client.pem");
      options.tls.clientKey = pki.pem("client.key");
    }
    if (proxied) options.proxy = parseProxyUrl(proxy.url("bench", "bench-password")).value();
    return sealEgress(std::move(options));
  };
  const size_t n = config.smoke ? 200 : 20'000;
  const std::string body = config.bodies.at(0);
  const std::string open = "https://127.0.0.1:" + std::to_string(nginx.openPort()) + "/hook";
  const std::string mutual = "https://127.0.0.1:" + std::to_string(nginx.mutualPort()) + "/hook";
  const double https = sendRate(client, open, egress(false, false), n, config.workers, body);
  const double mtls = sendRate(client, mutual, egress(true, false), n, config.workers, body);
  // Through the proxy at a twentieth of the count: it runs some 30 times slower.
  const size_t throughProxy = std::max<size_t>(200, n / 20);
  const double proxied =
      sendRate(client, open, egress(false, true), throughProxy, config.workers, body);
  const double both = sendRate(client, mutual, egress(true, true), throughProxy, config.workers, body);
  const std::string base = "https sends/s (private CA, keep-alive)";
  report.add({"egress", "https sends/s with a client certificate (mTLS)", mtls, "1/s", https, base,
              std::nullopt});
  report.add({"egress", "https sends/s through tinyproxy (CONNECT)", proxied, "1/s", https, base,
              std::nullopt});
  report.add({"egress", "mTLS sends/s through tinyproxy", both, "1/s", https, base, std::nullopt});
}

}  // namespace webhooker::bench
