// BrokerProcess: a message broker from Debian's packages (redis-server,
// nats-server, rabbitmq-server) run by a test on loopback: its own folder
// for data and log, stopped (SIGTERM, then SIGKILL) when the test ends or
// when the test takes it away to play an outage, started again on the same
// port. skipWithout() ends the test binary with 77 (skipped) where the
// broker is not installed, as the cluster suite does without haproxy.
//
// Header-only: the benchmarks (bench/) use it too. Not thread-safe.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/daemon_process.h"
#include "tests/support/haproxy_process.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {

// The first of `paths` that is an executable file.
inline std::optional<std::string> installedProgram(const std::vector<std::string>& paths) {
  for (const std::string& path : paths)
    if (::access(path.c_str(), X_OK) == 0) return path;
  return std::nullopt;
}

// Exits 77 (skipped) unless `program` is installed.
inline std::string programOrSkip(const std::vector<std::string>& paths, const char* package) {
  if (auto found = installedProgram(paths)) return *found;
  std::fprintf(stderr, "%s is not installed (scripts/install-deps installs it): skipped\n", package);
  std::exit(77);
}

class BrokerProcess {
 public:
  // `args` run with the folder as working directory; log to <folder>/broker.log.
  BrokerProcess() = default;
  ~BrokerProcess() { stop(); }
  BrokerProcess(const BrokerProcess&) = delete;
  BrokerProcess& operator=(const BrokerProcess&) = delete;

  const std::filesystem::path& dir() const { return dir_.path(); }

  void start(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    if (pid_ > 0) throw std::runtime_error("the broker is already running");
    const std::string log = (dir() / "broker.log").string();
    const Fd out(::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (out.get() < 0) throw std::runtime_error("cannot open " + log);
    pid_ = spawnChild(args, env, out.get(), out.get());
  }

  bool running() const { return pid_ > 0; }

  // SIGTERM and wait (SIGKILL after `timeout`).
  void stop(std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    if (!waitFor(pid_, timeout)) {
      ::kill(pid_, SIGKILL);
      waitFor(pid_, std::chrono::seconds(10));
    }
    pid_ = -1;
  }

  std::string logText() const {
    std::ifstream in(dir() / "broker.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  TempDir dir_;
  pid_t pid_ = -1;
};

}  // namespace webhooker::testing
