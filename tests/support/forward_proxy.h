// ForwardProxy: Debian's tinyproxy on loopback, run from the repo's own
// configuration (packaging/egress/tinyproxy.conf) with its port, addresses,
// paths and password moved to the test's. Its log shows every CONNECT line
// (connectLines()). Tests that need it skip (exit 77) where tinyproxy is not
// installed. Not thread-safe; the destructor SIGKILLs tinyproxy.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/daemon_process.h"
#include "tests/support/eventually.h"
#include "tests/support/haproxy_process.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {

// Ends the test program with 77 (skipped) unless one of `paths` is executable.
inline void skipWithout(const char* tool, std::initializer_list<const char*> paths) {
  for (const char* path : paths)
    if (::access(path, X_OK) == 0) return;
  std::fprintf(stderr, "%s is not installed (scripts/install-deps installs it): skipped\n", tool);
  std::exit(77);
}

// Whether something accepts TCP connections on 127.0.0.1:`port`.
inline bool acceptsOn(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return ok;
}

inline std::string readWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ForwardProxy {
 public:
  ForwardProxy(const std::string& user, const std::string& password) : port_(freeLoopbackPort()) {
    skipWithout("tinyproxy", {"/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"});
    const char* source = std::getenv("WEBHOOKER_SOURCE_DIR");
    if (!source) throw std::runtime_error("WEBHOOKER_SOURCE_DIR is not set");
    std::string config =
        readWholeFile(std::filesystem::path(source) / "packaging/egress/tinyproxy.conf");
    const auto place = [&](const std::string& key, const std::string& value) {
      const std::regex line("^" + key + " .*$", std::regex::multiline);
      if (!std::regex_search(config, line))
        throw std::runtime_error("packaging/egress/tinyproxy.conf has no " + key + " line");
      config = std::regex_replace(config, line, value.empty() ? "" : key + " " + value);
    };
    place("User", "");  // as root tinyproxy would switch to a user who cannot write here
    place("Group", "");
    place("Listen", "127.0.0.1");
    place("Port", std::to_string(port_));
    place("LogFile", "\"" + (dir_ / "tinyproxy.log").string() + "\"");
    place("PidFile", "\"" + (dir_ / "tinyproxy.pid").string() + "\"");
    place("Allow", "127.0.0.1");
    place("BasicAuth", user + " " + password);
    std::ofstream(dir_ / "tinyproxy.conf") << config;
    Fd out(::open((dir_ / "stdout.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    pid_ = spawnChild({"tinyproxy", "-d", "-c", (dir_ / "tinyproxy.conf").string()}, {}, out.get(),
                      out.get());
    if (!eventually([&] { return acceptsOn(port_); }, std::chrono::seconds(10)))
      throw std::runtime_error("tinyproxy did not start:\n" + readWholeFile(dir_ / "stdout.log") +
                               log());
  }
  ~ForwardProxy() {
    ::kill(pid_, SIGKILL);
    waitFor(pid_, std::chrono::seconds(10));
  }
  ForwardProxy(const ForwardProxy&) = delete;
  ForwardProxy& operator=(const ForwardProxy&) = delete;

  int port() const { return port_; }
  // http://user:password@127.0.0.1:<port>, as --egress-proxy takes it.
  std::string url(const std::string& user, const std::string& password) const {
    return "http://" + user + ":" + password + "@127.0.0.1:" + std::to_string(port_);
  }
  std::string log() const { return readWholeFile(dir_ / "tinyproxy.log"); }
  // "CONNECT 127.0.0.1:4431 HTTP/1.1" for each request tinyproxy was asked,
  // in order; any other method shows as itself ("GET http://...").
  std::vector<std::string> requestLines() const {
    std::vector<std::string> out;
    std::istringstream in(log());
    const std::string marker = "): ";
    for (std::string line; std::getline(in, line);) {
      if (line.find("Request (file descriptor") == std::string::npos) continue;
      out.push_back(line.substr(line.find(marker) + marker.size()));
    }
    return out;
  }

 private:
  TempDir dir_;
  int port_;
  pid_t pid_ = -1;
};

}  // namespace webhooker::testing
