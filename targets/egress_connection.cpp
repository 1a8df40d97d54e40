#include "targets/egress_connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace webhooker {

namespace {

using Steady = std::chrono::steady_clock;

int msLeft(Steady::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 3'600'000));
}

// Waits for `events` on fd until the deadline; false on timeout or error.
bool waitFor(int fd, short events, Steady::time_point deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = ::poll(&p, 1, msLeft(deadline));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

int connectBy(const addrinfo& ai, Steady::time_point deadline, int& err) {
  const int fd = ::socket(ai.ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    err = errno;
    return -1;
  }
  if (::connect(fd, ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS || !waitFor(fd, POLLOUT, deadline)) {
      err = errno == EINPROGRESS ? ETIMEDOUT : errno;
      ::close(fd);
      return -1;
    }
    socklen_t length = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &length) != 0 || err != 0) {
      ::close(fd);
      return -1;
    }
  }
  return fd;
}

// The proxy's first answer line, printable and short, for the error text.
std::string statusLine(const std::string& head) {
  std::string line = head.substr(0, std::min(head.find('\r'), size_t{120}));
  std::replace_if(line.begin(), line.end(), [](char c) { return c < 0x20 || c > 0x7e; }, '?');
  return line;
}

bool sendAll(int fd, const std::string& data, Steady::time_point deadline) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!waitFor(fd, POLLOUT, deadline)) return false;
    } else {
      return false;
    }
  }
  return true;
}

// Reads the proxy's answer up to the blank line and not one byte further:
// what follows is the receiver's.
bool readHead(int fd, std::string& head, Steady::time_point deadline) {
  char buffer[4096];
  while (head.size() < 16384) {
    if (!waitFor(fd, POLLIN, deadline)) return false;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_PEEK);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    const std::string seen = head + std::string(buffer, static_cast<size_t>(n));
    const size_t end = seen.find("\r\n\r\n", head.size() >= 3 ? head.size() - 3 : 0);
    const size_t take = end == std::string::npos ? static_cast<size_t>(n) : end + 4 - head.size();
    const ssize_t got = ::recv(fd, buffer, take, 0);
    if (got <= 0) return false;
    head.append(buffer, static_cast<size_t>(got));
    if (end != std::string::npos && static_cast<size_t>(got) == take) return true;
  }
  return false;
}

// A socket tunnelled through `proxy` to `authority` (an address literal and
// port), blocking, or -1 with `problem` said. Names no credential.
int openTunnel(const ProxyAddress& proxy, const std::string& authority,
               Steady::time_point deadline, std::string& problem) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc =
          ::getaddrinfo(proxy.host.c_str(), std::to_string(proxy.port).c_str(), &hints, &found);
      rc != 0) {
    problem = fmt::format("could not resolve the egress proxy {}: {}", proxy.display(),
                          ::gai_strerror(rc));
    return -1;
  }
  int fd = -1;
  int err = 0;
  for (const addrinfo* ai = found; ai && fd < 0; ai = ai->ai_next) fd = connectBy(*ai, deadline, err);
  ::freeaddrinfo(found);
  if (fd < 0) {
    problem = fmt::format("could not connect to the egress proxy {}: {}", proxy.display(),
                          std::strerror(err));
    return -1;
  }
  std::string request = fmt::format("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n", authority);
  if (!proxy.authorization.empty())
    request += "Proxy-Authorization: " + proxy.authorization + "\r\n";
  request += "\r\n";
  std::string head;
  if (!sendAll(fd, request, deadline) || !readHead(fd, head, deadline)) {
    problem = fmt::format("the egress proxy {} did not answer CONNECT {} in time or closed the "
                          "connection", proxy.display(), authority);
    ::close(fd);
    return -1;
  }
  // "HTTP/1.x 2xx"
  if (head.size() < 12 || head.compare(0, 7, "HTTP/1.") != 0 || head[9] != '2') {
    problem = fmt::format("the egress proxy {} refused CONNECT {}: {}{}", proxy.display(),
                          authority, statusLine(head),
                          head.compare(9, 3, "407") == 0 || head.compare(9, 3, "401") == 0
                              ? (proxy.authorization.empty()
                                     ? " (it wants credentials in the proxy URL)"
                                     : " (it refused the proxy URL's credentials)")
                              : "");
    ::close(fd);
    return -1;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

std::string authorityOf(const std::string& pinned, int port) {
  return pinned.find(':') != std::string::npos ? fmt::format("[{}]:{}", pinned, port)
                                               : fmt::format("{}:{}", pinned, port);
}

// The parts both kinds of connection share: where to tunnel to, if anywhere.
struct Route {
  std::optional<ProxyAddress> proxy;
  std::string authority;  // the vetted address literal and port

  // Fills socket.sock with a tunnel; false with notes.proxyProblem said.
  template <typename Socket>
  bool tunnel(Socket& socket, httplib::Error& error, ConnectionNotes& notes) const {
    const int fd = openTunnel(*proxy, authority, notes.deadline, notes.proxyProblem);
    if (fd < 0) {
      error = httplib::Error::Connection;
      return false;
    }
    socket.sock = fd;
    return true;
  }
};

class PlainConnection final : public httplib::ClientImpl, public EgressConnection {
 public:
  PlainConnection(const Url& url, Route route)
      : httplib::ClientImpl(url.host, url.port), route_(std::move(route)) {}
  httplib::ClientImpl& http() override { return *this; }

 protected:
  bool create_and_connect_socket(Socket& socket, httplib::Error& error) override {
    if (!route_.proxy) return httplib::ClientImpl::create_and_connect_socket(socket, error);
    return route_.tunnel(socket, error, notes);
  }

 private:
  Route route_;
};

ConnectionNotes* notesOf(const SSL* ssl) {
  return static_cast<ConnectionNotes*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
}

int verifyCallback(int ok, X509_STORE_CTX* store) {
  if (ok) return ok;
  const auto* ssl = static_cast<const SSL*>(
      X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  if (ConnectionNotes* notes = ssl ? notesOf(ssl) : nullptr; notes && notes->tlsProblem.empty())
    notes->tlsProblem = fmt::format("TLS: the receiver's certificate did not verify: {}",
                                    X509_verify_cert_error_string(X509_STORE_CTX_get_error(store)));
  return ok;
}

// A fatal alert the receiver sent ("certificate required", "unknown CA"):
// with TLS 1.3 a refused client certificate shows only as this, after our
// side of the handshake has finished.
void infoCallback(const SSL* ssl, int where, int value) {
  if ((where & SSL_CB_READ_ALERT) != SSL_CB_READ_ALERT) return;
  if (std::strcmp(SSL_alert_type_string(value), "F") != 0) return;
  if (ConnectionNotes* notes = notesOf(ssl); notes && notes->tlsProblem.empty())
    notes->tlsProblem = fmt::format("TLS: the receiver ended the handshake with the alert \"{}\"",
                                    SSL_alert_desc_string_long(value));
}

class TlsConnection final : public httplib::SSLClient, public EgressConnection {
 public:
  TlsConnection(const Url& url, Route route, const TlsOptions& tls)
      : httplib::SSLClient(url.host, url.port), route_(std::move(route)) {
    // OpenSSL checks chain and name during the handshake (cpp-httplib's own
    // check afterwards would load the system CAs whatever the bundle says).
    enable_server_certificate_verification(false);
    SSL_CTX* ctx = ssl_context();
    if (!ctx) {
      notes.setupProblem = "TLS: could not create a TLS context";
      return;
    }
    SSL_CTX_set_app_data(ctx, &notes);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, verifyCallback);
    SSL_CTX_set_info_callback(ctx, infoCallback);
    X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
    if (url.ipv6Literal || url.host.find_first_not_of("0123456789.") == std::string::npos) {
      X509_VERIFY_PARAM_set1_ip_asc(param, url.host.c_str());
    } else {
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      X509_VERIFY_PARAM_set1_host(param, url.host.c_str(), url.host.size());
    }
    if (!tls.caBundleOnly) SSL_CTX_set_default_verify_paths(ctx);
    if (!tls.caBundle.empty() && !addCertificates(ctx, tls.caBundle))
      notes.setupProblem = "TLS: the target's ca_bundle did not load";
    if (!tls.clientCert.empty() && !useClientCertificate(ctx, tls))
      notes.setupProblem = "TLS: the target's client certificate or key did not load";
    ERR_clear_error();
  }
  httplib::ClientImpl& http() override { return *this; }

 private:
  bool create_and_connect_socket(Socket& socket, httplib::Error& error) override {
    if (!is_valid()) return false;
    if (!route_.proxy) return httplib::ClientImpl::create_and_connect_socket(socket, error);
    return route_.tunnel(socket, error, notes);
  }

  static bool addCertificates(SSL_CTX* ctx, const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    int added = 0;
    while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      added += X509_STORE_add_cert(store, cert) == 1 ? 1 : 0;
      X509_free(cert);
    }
    BIO_free(bio);
    return added > 0;
  }

  static bool useClientCertificate(SSL_CTX* ctx, const TlsOptions& tls) {
    BIO* certs = BIO_new_mem_buf(tls.clientCert.data(), static_cast<int>(tls.clientCert.size()));
    bool ok = false;
    if (X509* leaf = PEM_read_bio_X509(certs, nullptr, nullptr, nullptr)) {
      ok = SSL_CTX_use_certificate(ctx, leaf) == 1;
      X509_free(leaf);
      // The rest is the chain up to the receiver's CA, sent along.
      while (X509* chain = PEM_read_bio_X509(certs, nullptr, nullptr, nullptr))
        if (SSL_CTX_add0_chain_cert(ctx, chain) != 1) X509_free(chain);
    }
    BIO_free(certs);
    BIO* keyBio = BIO_new_mem_buf(tls.clientKey.data(), static_cast<int>(tls.clientKey.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(keyBio, nullptr, nullptr, nullptr);
    BIO_free(keyBio);
    ok = ok && key && SSL_CTX_use_PrivateKey(ctx, key) == 1 && SSL_CTX_check_private_key(ctx) == 1;
    EVP_PKEY_free(key);
    return ok;
  }

  Route route_;
};

}  // namespace

std::unique_ptr<EgressConnection> openEgressConnection(const Url& url, const std::string& pinned,
                                                       const ProxyAddress* proxy,
                                                       const TlsOptions& tls) {
  Route route;
  if (proxy) route.proxy = *proxy;
  route.authority = authorityOf(pinned, url.port);
  std::unique_ptr<EgressConnection> out;
  if (url.scheme == "https")
    out = std::make_unique<TlsConnection>(url, std::move(route), tls);
  else
    out = std::make_unique<PlainConnection>(url, std::move(route));
  httplib::ClientImpl& client = out->http();
  // Directly: connect to the address the guard vetted, whatever DNS says now.
  if (!proxy) client.set_hostname_addr_map({{url.host, pinned}});
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);
  client.set_follow_location(false);
  client.set_decompress(false);  // a compressed response body is stored as sent
  return out;
}

}  // namespace webhooker
