// Running the real webhooker binary (WEBHOOKER_BIN, set by tests/meson.build)
// as a child process: DaemonProcess for `webhooker serve`, runCommand() for
// one-shot commands (the CLI, migrate, admin-token).
//
// Children get our environment minus the variables webhooker reads
// (WEBHOOKER_*, DATA_DIR, PORT, ...), so a token, URL or data folder a
// developer exported in their shell never changes what a test sees or
// touches; tests add what they need explicitly ("NAME=value").
//
// Not thread-safe: drive a DaemonProcess from the test's thread. Failures to
// start throw std::runtime_error, which doctest reports as a failed test.
//
// Header-only, unlike most of tests/support: the benchmarks (bench/) run the
// daemon with it too, and they do not link the test support library.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/temp_dir.h"

extern char** environ;

namespace webhooker::testing {

using namespace std::chrono_literals;

inline std::string webhookerBin() {
  const char* bin = std::getenv("WEBHOOKER_BIN");
  if (!bin || !*bin) throw std::runtime_error("WEBHOOKER_BIN is not set; run through meson test");
  return bin;
}

// An owned file descriptor, closed when it goes out of scope.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read;
  Fd write;
};

// O_CLOEXEC so no other child inherits our ends; dup2 onto the child's
// 1/2 clears the flag there.
inline Pipe makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  return {Fd(fds[0]), Fd(fds[1])};
}

inline bool isWebhookerVariable(const std::string& name) {
  return name.rfind("WEBHOOKER_", 0) == 0 || name.rfind("METRICS_", 0) == 0 ||
         name == "DATA_DIR" || name == "PORT" || name == "DEBUG";
}

inline std::vector<std::string> childEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry(*e);
    if (!isWebhookerVariable(entry.substr(0, entry.find('=')))) env.push_back(entry);
  }
  for (const std::string& entry : extra) {
    const std::string name = entry.substr(0, entry.find('='));
    std::erase_if(env, [&](const std::string& e) { return e.substr(0, e.find('=')) == name; });
    env.push_back(entry);
  }
  return env;
}

// argv/envp for posix_spawn: pointers into strings this object owns.
class CStringArray {
 public:
  explicit CStringArray(std::vector<std::string> strings) : strings_(std::move(strings)) {
    for (std::string& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  char** get() { return pointers_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

// Starts args[0] (looked up in PATH unless it has a '/') with stdin from
// stdinFd (or /dev/null when it is -1) and stdout/stderr on the given
// descriptors.
inline pid_t spawnChild(const std::vector<std::string>& args, const std::vector<std::string>& env,
                        int stdoutFd, int stderrFd, int stdinFd = -1) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdinFd < 0) posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  else posix_spawn_file_actions_adddup2(&actions, stdinFd, 0);
  posix_spawn_file_actions_adddup2(&actions, stdoutFd, 1);
  posix_spawn_file_actions_adddup2(&actions, stderrFd, 2);
  CStringArray argv(args);
  CStringArray envp(childEnvironment(env));
  pid_t pid = -1;
  const int rc =
      ::posix_spawnp(&pid, args.at(0).c_str(), &actions, nullptr, argv.get(), envp.get());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw std::runtime_error("cannot start " + args.at(0) + ": " + std::strerror(rc));
  return pid;
}

// The exit code, or 128 + the signal that ended it (as a shell reports it).
inline int decodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// The child's decoded status, or nullopt if it is still running at the
// deadline.
inline std::optional<int> waitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return decodeStatus(status);
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(10ms);
  }
}

inline void appendAvailable(int fd, std::string& out, bool& open) {
  char buffer[4096];
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n > 0) out.append(buffer, static_cast<size_t>(n));
  else if (n == 0 || errno != EINTR) open = false;
}

struct CommandResult {
  int exitCode = -1;  // 128 + signal if killed; the timeout kills with SIGKILL
  std::string out;
  std::string err;
};

// Runs a command to completion, reading stdout and stderr together so
// neither pipe can fill up and stall it. `input` (small: it must fit in a
// pipe's buffer) is its standard input.
inline CommandResult runCommand(const std::vector<std::string>& args,
                                const std::vector<std::string>& env = {},
                                std::chrono::milliseconds timeout = 30s,
                                std::string_view input = {}) {
  Pipe in = makePipe();
  if (::write(in.write.get(), input.data(), input.size()) != static_cast<ssize_t>(input.size()))
    throw std::runtime_error("cannot write the command's input");
  in.write.reset();
  Pipe out = makePipe();
  Pipe err = makePipe();
  const pid_t pid = spawnChild(args, env, out.write.get(), err.write.get(), in.read.get());
  in.read.reset();
  out.write.reset();
  err.write.reset();

  CommandResult result;
  bool outOpen = true;
  bool errOpen = true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while ((outOpen || errOpen) && std::chrono::steady_clock::now() < deadline) {
    pollfd fds[2] = {{outOpen ? out.read.get() : -1, POLLIN, 0},
                     {errOpen ? err.read.get() : -1, POLLIN, 0}};
    if (::poll(fds, 2, 100) <= 0) continue;
    if (fds[0].revents) appendAvailable(out.read.get(), result.out, outOpen);
    if (fds[1].revents) appendAvailable(err.read.get(), result.err, errOpen);
  }
  auto status = waitFor(pid, outOpen || errOpen ? 0ms : timeout);
  if (!status) {
    ::kill(pid, SIGKILL);
    status = waitFor(pid, 10s);
  }
  result.exitCode = status.value_or(-1);
  return result;
}

// `webhooker <args>` with the binary under test.
inline CommandResult runWebhooker(std::vector<std::string> args,
                                  const std::vector<std::string>& env = {},
                                  std::string_view input = {}) {
  args.insert(args.begin(), webhookerBin());
  return runCommand(args, env, 30s, input);
}

struct DaemonOptions {
  std::vector<std::string> args;  // after `serve --port <port> --data-dir <dir>`
  int port = 0;                   // 0: any free one; a given one lets a restart keep its address
  std::vector<std::string> env;   // "NAME=value"
  std::chrono::milliseconds startTimeout = 10s;
};

// `webhooker serve --port <port> --data-dir <dataDir>`, started in the
// constructor, which returns once the daemon printed its listening line.
// stdout is read by a thread into a buffer; stderr (the log) goes to a file.
// Neither is a terminal, so a generated admin token is written to
// <dataDir>/admin-token.txt, where adminToken() reads it.
// The destructor SIGKILLs a daemon still running.
class DaemonProcess {
 public:
  explicit DaemonProcess(const std::filesystem::path& dataDir, DaemonOptions options = {})
      : stderrPath_(logDir_ / "stderr.log"), tokenFile_(dataDir / "admin-token.txt") {
    const std::optional<std::string> tokenBefore = readTokenFile();
    std::vector<std::string> args = {webhookerBin(), "serve",
                                     "--port",       std::to_string(options.port),
                                     "--data-dir",   dataDir.string()};
    args.insert(args.end(), options.args.begin(), options.args.end());
    Pipe out = makePipe();
    Fd err(::open(stderrPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (err.get() < 0) throw std::runtime_error("cannot create " + stderrPath_.string());
    pid_ = spawnChild(args, options.env, out.write.get(), err.get());
    out.write.reset();  // our copy; EOF comes when the daemon exits
    stdout_ = std::move(out.read);
    reader_ = std::thread([this] { readStdout(); });
    if (!waitUntilListening(options.startTimeout)) {
      const std::string why = "webhooker did not start listening within the timeout.\nstdout:\n" +
                              stdoutText() + "\nstderr:\n" + stderrText();
      kill9();
      stopReader();
      throw std::runtime_error(why);
    }
    // The file is written before the listening line; a new token is one
    // that was not there before this start.
    if (auto token = readTokenFile(); token != tokenBefore) adminToken_ = std::move(token);
  }

  ~DaemonProcess() {
    kill9();
    stopReader();
  }

  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://" + host_ + ":" + std::to_string(port_); }
  pid_t pid() const { return pid_; }
  bool running() const { return !exitStatus_; }
  // The token the daemon generated on this start (a first start); nullopt
  // when it generated none.
  const std::optional<std::string>& adminToken() const { return adminToken_; }

  std::string stdoutText() const {
    std::lock_guard lock(stdoutMutex_);
    return stdoutBuffer_;
  }
  std::string stderrText() const {
    std::ifstream in(stderrPath_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // SIGTERM, then waits; returns the exit status (0 is a clean stop). A
  // daemon still running after `timeout` is SIGKILLed and -1 returned, so a
  // test asserting 0 fails. Afterwards stdoutText() holds all it printed.
  int stop(std::chrono::milliseconds timeout = 10s) {
    if (!running()) return *exitStatus_;
    ::kill(pid_, SIGTERM);
    exitStatus_ = waitFor(pid_, timeout);
    if (!exitStatus_) {
      kill9();
      exitStatus_ = -1;
    }
    std::unique_lock lock(stdoutMutex_);
    stdoutChanged_.wait_for(lock, 1s, [this] { return stdoutEof_; });
    return *exitStatus_;
  }

  // An unclean death: no chance to finish anything. Returns 128 + 9.
  int kill9() {
    if (!running()) return *exitStatus_;
    ::kill(pid_, SIGKILL);
    exitStatus_ = waitFor(pid_, 10s).value_or(-1);
    return *exitStatus_;
  }

 private:
  // Polls rather than blocking in read(): a grandchild that inherited the
  // pipe (a wrapper script as WEBHOOKER_BIN) could keep it open forever, and
  // the destructor must still be able to join.
  void readStdout() {
    std::string chunk;
    bool open = true;
    while (open && !stopReading_) {
      pollfd p{stdout_.get(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      chunk.clear();
      appendAvailable(stdout_.get(), chunk, open);
      std::lock_guard lock(stdoutMutex_);
      stdoutBuffer_ += chunk;
      stdoutEof_ = !open;
      stdoutChanged_.notify_all();
    }
  }

  void stopReader() {
    stopReading_ = true;
    if (reader_.joinable()) reader_.join();
  }

  // The first line of the token file; nullopt when there is none.
  std::optional<std::string> readTokenFile() const {
    std::ifstream in(tokenFile_);
    std::string line;
    if (!in || !std::getline(in, line)) return std::nullopt;
    return line;
  }

  // Parses the port once the listening line is complete; false on timeout
  // or if the daemon exited first.
  bool waitUntilListening(std::chrono::milliseconds timeout) {
    std::unique_lock lock(stdoutMutex_);
    std::optional<std::pair<std::string, int>> address;
    stdoutChanged_.wait_for(lock, timeout, [&] {
      address = listeningAddress(stdoutBuffer_);
      return address || stdoutEof_;
    });
    if (!address) return false;
    host_ = address->first;
    port_ = address->second;
    return true;
  }

  // The host and port of "webhooker listening on http://<host>:<port>...\n"
  // once that line is complete in `text`.
  static std::optional<std::pair<std::string, int>> listeningAddress(const std::string& text) {
    static constexpr std::string_view kPrefix = "webhooker listening on http://";
    for (size_t at = text.find(kPrefix); at != std::string::npos; at = text.find(kPrefix, at + 1)) {
      const size_t hostAt = at + kPrefix.size();
      if (text.find('\n', hostAt) == std::string::npos) return std::nullopt;  // not complete yet
      const std::string address = text.substr(hostAt, text.find_first_of(" \n", hostAt) - hostAt);
      const size_t colon = address.rfind(':');
      if (colon == std::string::npos || colon == 0) continue;
      const std::string digits = address.substr(colon + 1);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
      return std::pair(address.substr(0, colon), std::stoi(digits));
    }
    return std::nullopt;
  }

  TempDir logDir_;
  const std::filesystem::path stderrPath_;
  const std::filesystem::path tokenFile_;
  pid_t pid_ = -1;
  std::optional<int> exitStatus_;  // set once the child was reaped
  std::string host_;
  int port_ = 0;
  std::optional<std::string> adminToken_;

  Fd stdout_;
  mutable std::mutex stdoutMutex_;  // guards stdoutBuffer_ and stdoutEof_
  std::condition_variable stdoutChanged_;
  std::string stdoutBuffer_;
  bool stdoutEof_ = false;
  std::atomic<bool> stopReading_ = false;
  std::thread reader_;  // last: started after everything it touches exists
};

}  // namespace webhooker::testing
