// HaproxyProcess: a real HAProxy (Debian's haproxy) in front of webhooker
// nodes on loopback, as docs/scaling.md configures it (checks every 200 ms,
// down after 3 failed, so one slow answer on a loaded machine is not an
// outage; a dead node still gets 503 at once, its connections refused): a map from
// entrypoint and webhook ids to one backend per node, /readyz health checks,
// an admin socket for `webhooker cluster sync`, and a JSON 404 for what the
// map does not know.
//
// HAProxy cannot bind port 0: freeLoopbackPort() binds one, reads it and
// lets it go, and HAProxy binds it right after. Not thread-safe; the
// destructor SIGKILLs HAProxy.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "tests/support/daemon_process.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {

// The path of the haproxy binary, if it is installed.
inline std::optional<std::string> haproxyBin() {
  for (const char* path : {"/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy"})
    if (::access(path, X_OK) == 0) return std::string(path);
  return std::nullopt;
}

inline int freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("cannot find a free loopback port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

// The configuration docs/scaling.md shows, for nodes name → port on
// 127.0.0.1.
inline std::string haproxyConfig(int port, const std::filesystem::path& socket,
                                 const std::filesystem::path& map,
                                 const std::map<std::string, int>& nodes) {
  std::string config =
      "global\n"
      "  stats socket " + socket.string() + " mode 600 level admin\n"
      "defaults\n"
      "  mode http\n"
      "  timeout connect 1s\n"
      "  timeout client 10s\n"
      "  timeout server 10s\n"
      "  timeout check 2s\n"
      "  retries 2\n"
      "  option http-keep-alive\n"
      "  http-error status 503 content-type application/json string "
      "'{\"error\":{\"code\":\"node_unavailable\",\"message\":\"the node that holds this webhook "
      "is not answering; retry shortly\"}}'\n"
      "frontend webhooker\n"
      "  bind 127.0.0.1:" + std::to_string(port) + "\n"
      "  use_backend %[path,field(3,/),lower,map(" + map.string() + ",unknown)] "
      "if { path_beg /hooks/ }\n"
      "  use_backend %[path,field(5,/),lower,map(" + map.string() + ",unknown)] "
      "if { path_beg /api/v1/webhooks/ }\n"
      "  default_backend unknown\n"
      "backend unknown\n"
      "  http-request return status 404 content-type application/json string "
      "'{\"error\":{\"code\":\"not_found\",\"message\":\"no such entrypoint or webhook\"}}'\n";
  for (const auto& [name, nodePort] : nodes)
    config += "backend node_" + name + "\n"
              "  option httpchk GET /readyz\n"
              "  server " + name + " 127.0.0.1:" + std::to_string(nodePort) +
              " check inter 200ms fall 3 rise 1\n";
  return config;
}

class HaproxyProcess {
 public:
  explicit HaproxyProcess(const std::map<std::string, int>& nodes)
      : socket_(dir_ / "admin.sock"), map_(dir_ / "routes.map"), port_(freeLoopbackPort()) {
    std::ofstream(map_) << "";
    const std::filesystem::path config = dir_ / "haproxy.cfg";
    std::ofstream(config) << haproxyConfig(port_, socket_, map_, nodes);
    Fd log(::open((dir_ / "haproxy.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    pid_ = spawnChild({haproxyBin().value(), "-db", "-f", config.string()}, {}, log.get(),
                      log.get());
    for (int i = 0; i < 500 && !std::filesystem::exists(socket_); ++i)
      std::this_thread::sleep_for(10ms);
    if (!std::filesystem::exists(socket_)) {
      std::ifstream in(dir_ / "haproxy.log");
      std::stringstream text;
      text << in.rdbuf();
      throw std::runtime_error("haproxy did not start:\n" + text.str());
    }
  }
  ~HaproxyProcess() {
    ::kill(pid_, SIGKILL);
    waitFor(pid_, 10s);
  }
  HaproxyProcess(const HaproxyProcess&) = delete;
  HaproxyProcess& operator=(const HaproxyProcess&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::filesystem::path& socket() const { return socket_; }
  const std::filesystem::path& map() const { return map_; }

 private:
  TempDir dir_;
  const std::filesystem::path socket_;
  const std::filesystem::path map_;
  const int port_;
  pid_t pid_ = -1;
};

}  // namespace webhooker::testing
