// TLS on loopback for the egress tests, all from Debian's own tools:
//
// TestPki    certificates made by the openssl CLI in a temp folder: a private
//            server CA and a receiver certificate for "receiver.test" and
//            127.0.0.1; a client CA, a client certificate it signed, one it
//            signed that expired in 2020, and a self-signed stranger.
// NginxTls   nginx answering 200 "ok" to anything on two TLS ports: `open`
//            (no client certificate asked) and `mutual` (a certificate from
//            the client CA required). Its access log names the port, SNI
//            and the client certificate's subject per request.
// SServer    `openssl s_server` requiring a client CA certificate and ending
//            the handshake on anything else: a refused certificate shows
//            as a TLS alert, as a strict receiver does it.
//
// All skip the test (exit 77) where nginx or openssl is missing. Not
// thread-safe; destructors SIGKILL their servers.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "tests/support/daemon_process.h"
#include "tests/support/eventually.h"
#include "tests/support/forward_proxy.h"
#include "tests/support/haproxy_process.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {

class TestPki {
 public:
  TestPki() {
    skipWithout("openssl", {"/usr/bin/openssl"});
    const std::string script = R"(set -e
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key"; }
ca() { key "$1"; openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "/CN=$2"; }
signed() {  # name CN ca extfile
  key "$1"; openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2"
  openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -out "$1.pem" \
    -days 1 ${4:+-extfile "$4"}
}
ca server-ca "Egress Test Server CA"
printf 'subjectAltName=DNS:receiver.test,IP:127.0.0.1\n' > server.ext
signed server receiver.test server-ca server.ext
ca client-ca "Egress Test Client CA"
signed client webhooker-client client-ca
key stranger
openssl req -x509 -new -key stranger.key -out stranger.pem -days 2 -subj /CN=webhooker-client
printf '[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nnew_certs_dir=.\nserial=serial\ndefault_md=sha256\npolicy=p\n[p]\ncommonName=supplied\n' > ca.cnf
: > index.txt; echo 01 > serial
key expired; openssl req -new -key expired.key -out expired.csr -subj /CN=webhooker-client
openssl ca -batch -config ca.cnf -cert client-ca.pem -keyfile client-ca.key -in expired.csr \
  -out expired.pem -startdate 20200101000000Z -enddate 20200102000000Z -notext
)";
    const auto r = runCommand({"sh", "-c", "cd '" + dir_.path().string() + "' && " + script});
    if (r.exitCode != 0) throw std::runtime_error("making the test certificates failed:\n" + r.err);
  }

  std::filesystem::path path(const std::string& file) const { return dir_ / file; }
  // The PEM text of `file` (e.g. "client.pem", "client.key").
  std::string pem(const std::string& file) const { return readWholeFile(dir_ / file); }

 private:
  TempDir dir_;
};

class NginxTls {
 public:
  explicit NginxTls(const TestPki& pki) : open_(freeLoopbackPort()), mutual_(freeLoopbackPort()) {
    skipWithout("nginx", {"/usr/sbin/nginx", "/usr/bin/nginx"});
    const std::string d = dir_.path().string();
    // As root nginx would hand its workers to "nobody", who cannot read here.
    // One process (master_process off): a SIGKILLed master leaves no worker.
    const std::string config =
        std::string(::getuid() == 0 ? "user root;\n" : "") + "daemon off;\nmaster_process off;\npid " + d +
        "/nginx.pid;\nerror_log " + d + "/error.log;\nevents { worker_connections 64; }\n"
        "http {\n"
        "  log_format egress '$server_port sni=$ssl_server_name client=\"$ssl_client_s_dn\" "
        "$request_method $request_uri host=$host $status';\n"
        "  access_log " + d + "/access.log egress;\n"
        "  client_body_temp_path " + d + "/body;\n  proxy_temp_path " + d + "/proxy;\n"
        "  fastcgi_temp_path " + d + "/fastcgi;\n  uwsgi_temp_path " + d + "/uwsgi;\n"
        "  scgi_temp_path " + d + "/scgi;\n"
        "  ssl_certificate " + pki.path("server.pem").string() + ";\n"
        "  ssl_certificate_key " + pki.path("server.key").string() + ";\n"
        "  server { listen 127.0.0.1:" + std::to_string(open_) + " ssl;\n"
        "    location / { return 200 \"ok\"; } }\n"
        "  server { listen 127.0.0.1:" + std::to_string(mutual_) + " ssl;\n"
        "    ssl_verify_client on;\n"
        "    ssl_client_certificate " + pki.path("client-ca.pem").string() + ";\n"
        "    location / { return 200 \"ok\"; } }\n"
        "}\n";
    std::ofstream(dir_ / "nginx.conf") << config;
    Fd out(::open((dir_ / "stdout.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    pid_ = spawnChild({"nginx", "-p", d, "-e", d + "/error.log", "-c", d + "/nginx.conf"}, {},
                      out.get(), out.get());
    if (!eventually([&] { return acceptsOn(open_) && acceptsOn(mutual_); }, std::chrono::seconds(10)))
      throw std::runtime_error("nginx did not start:\n" + readWholeFile(dir_ / "error.log"));
  }
  ~NginxTls() {
    ::kill(pid_, SIGKILL);
    waitFor(pid_, std::chrono::seconds(10));
  }
  NginxTls(const NginxTls&) = delete;
  NginxTls& operator=(const NginxTls&) = delete;

  int openPort() const { return open_; }
  int mutualPort() const { return mutual_; }
  std::string accessLog() const { return readWholeFile(dir_ / "access.log"); }

 private:
  TempDir dir_;
  int open_;
  int mutual_;
  pid_t pid_ = -1;
};

// nginx writes a request's log line after its answer, once it has read and
// dropped the rest of the body (`return 200` does not wait for it), or after
// its 5 s lingering_timeout: wait longer than that.
inline bool eventuallyLogged(const NginxTls& nginx, const std::string& line) {
  return eventually([&] { return nginx.accessLog().find(line) != std::string::npos; },
                    std::chrono::seconds(15));
}

class SServer {
 public:
  explicit SServer(const TestPki& pki) : port_(freeLoopbackPort()) {
    Fd out(::open((dir_ / "s_server.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    pid_ = spawnChild({"openssl", "s_server", "-accept", "127.0.0.1:" + std::to_string(port_),
                       "-cert", pki.path("server.pem").string(), "-key",
                       pki.path("server.key").string(), "-CAfile", pki.path("client-ca.pem").string(),
                       "-Verify", "1", "-verify_return_error", "-www"},
                      {}, out.get(), out.get());
    if (!eventually([&] { return acceptsOn(port_); }, std::chrono::seconds(10)))
      throw std::runtime_error("openssl s_server did not start:\n" + log());
  }
  ~SServer() {
    ::kill(pid_, SIGKILL);
    waitFor(pid_, std::chrono::seconds(10));
  }
  SServer(const SServer&) = delete;
  SServer& operator=(const SServer&) = delete;

  int port() const { return port_; }
  std::string log() const { return readWholeFile(dir_ / "s_server.log"); }

 private:
  TempDir dir_;
  int port_;
  pid_t pid_ = -1;
};

}  // namespace webhooker::testing
