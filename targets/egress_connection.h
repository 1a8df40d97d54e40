// EgressConnection: one pooled connection of HttpClient to one destination,
// direct or through a forward proxy, with a target's TLS settings.
//
// Through a proxy it opens its socket itself: TCP to the proxy, then
// "CONNECT <vetted address>:<port>" (Proxy-Authorization when the proxy URL
// had credentials), then hands the tunnel to cpp-httplib, which speaks
// HTTP, or TLS with SNI and the Host header naming the host, over it.
// Directly it connects to the vetted address (cpp-httplib's address map).
//
// TLS is verified by OpenSSL during the handshake: the chain against the
// system CAs and/or the target's bundle, the name (or address) against the
// certificate. What went wrong (the proxy's refusal, the certificate check,
// a TLS alert from the receiver such as "certificate required") is kept in
// `notes` for the attempt's error text; cpp-httplib itself only says
// "connection" or "read" failed.
//
// Threading: used by one attempt at a time (HttpClient's pool).
#pragma once

#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>

#include "base/url.h"
#include "targets/egress.h"

namespace webhooker {

struct ConnectionNotes {
  std::chrono::steady_clock::time_point deadline;  // of the attempt, for the tunnel
  std::string proxyProblem;  // the proxy was unreachable or refused the CONNECT
  std::string tlsProblem;    // the certificate check or a fatal TLS alert
  std::string setupProblem;  // the target's TLS material did not load
};

class EgressConnection {
 public:
  virtual ~EgressConnection() = default;
  virtual httplib::ClientImpl& http() = 0;
  ConnectionNotes notes;
};

// `pinned` is the address the SsrfGuard vetted; `proxy` may be null (direct).
std::unique_ptr<EgressConnection> openEgressConnection(const Url& url, const std::string& pinned,
                                                       const ProxyAddress* proxy,
                                                       const TlsOptions& tls);

}  // namespace webhooker
