// Egress: how an attempt leaves this host, beside where it goes. A forward
// proxy (--egress-proxy or a target's `proxy`), the TLS material of a target
// (a private CA bundle, a client certificate and key) and the checks run
// when a target is written: a certificate that does not parse, has expired
// or does not match its key is refused then, not found at the first attempt.
//
// The proxy only carries bytes: webhooker resolves and vets the destination
// itself (SsrfGuard) and asks the proxy to CONNECT to the vetted address
// literal, for https and plain http alike, so the proxy never resolves a
// name and nothing the guard refuses can get through it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "targets/oauth2.h"

namespace webhooker {

struct ProxyAddress {
  std::string host;  // a name or an address literal (IPv6 without brackets)
  int port = 0;
  bool ipv6Literal = false;
  // "Basic <base64>" when the proxy URL carried user:password; a secret.
  std::string authorization;

  // host:port, never the credentials: what logs and error texts name.
  std::string display() const;
};

// Reads "http://[user:password@]host:port[/]". Errors name no credential.
Result<ProxyAddress> parseProxyUrl(std::string_view text);

// A target's TLS settings (all PEM text). Empty fields: the system's CAs,
// no client certificate.
struct TlsOptions {
  std::string caBundle;         // trusted on top of the system CAs...
  bool caBundleOnly = false;    // ...or instead of them
  std::string clientCert;       // secret (with its chain, leaf first)
  std::string clientKey;        // secret

  bool empty() const { return caBundle.empty() && clientCert.empty(); }
};

// What an attempt leaves through, shared by every attempt of one target.
struct EgressOptions {
  std::optional<ProxyAddress> proxy;  // the target's own; else the daemon's
  TlsOptions tls;
  std::optional<OAuth2Settings> oauth2;  // a bearer token on every request
  // Tells connection pools apart: a digest of everything above, so two
  // targets share pooled connections only when they would make the same ones.
  std::string identity;
};

// Fills `identity` (proxy and TLS: what a connection is made with) and the
// OAuth2 settings' key in.
std::shared_ptr<const EgressOptions> sealEgress(EgressOptions options);

// The checks run when a target is written. `field` names the config field
// in the error ("config.tls.client_cert ..."). Errors are invalid_config.
Result<void> checkCaBundle(std::string_view pem, std::string_view field);
Result<void> checkClientCertificate(std::string_view certPem, std::string_view keyPem,
                                    std::string_view field);

}  // namespace webhooker
