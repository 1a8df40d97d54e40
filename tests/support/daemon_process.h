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

// The binary under test; throws when WEBHOOKER_BIN is not set.
std::string webhookerBin();

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
Pipe makePipe();

bool isWebhookerVariable(const std::string& name);

// Our environment minus the webhooker variables, plus `extra` ("NAME=value",
// replacing a variable of the same name).
std::vector<std::string> childEnvironment(const std::vector<std::string>& extra);

// argv/envp for posix_spawn: pointers into strings this object owns.
class CStringArray {
 public:
  explicit CStringArray(std::vector<std::string> strings);
  char** get() { return pointers_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

// Starts args[0] (looked up in PATH unless it has a '/') with stdin from
// stdinFd (or /dev/null when it is -1) and stdout/stderr on the given
// descriptors.
pid_t spawnChild(const std::vector<std::string>& args, const std::vector<std::string>& env,
                 int stdoutFd, int stderrFd, int stdinFd = -1);

// The exit code, or 128 + the signal that ended it (as a shell reports it).
int decodeStatus(int status);

// The child's decoded status, or nullopt if it is still running at the
// deadline.
std::optional<int> waitFor(pid_t pid, std::chrono::milliseconds timeout);

// Appends what one read() of `fd` returns to `out`; `open` turns false at
// the end of the stream or on an error.
void appendAvailable(int fd, std::string& out, bool& open);

struct CommandResult {
  int exitCode = -1;  // 128 + signal if killed; the timeout kills with SIGKILL
  std::string out;
  std::string err;
};

// Runs a command to completion, reading stdout and stderr together so
// neither pipe can fill up and stall it. `input` (small: it must fit in a
// pipe's buffer) is its standard input.
CommandResult runCommand(const std::vector<std::string>& args,
                         const std::vector<std::string>& env = {},
                         std::chrono::milliseconds timeout = 30s, std::string_view input = {});

// `webhooker <args>` with the binary under test.
CommandResult runWebhooker(std::vector<std::string> args, const std::vector<std::string>& env = {},
                           std::string_view input = {});

struct DaemonOptions {
  std::vector<std::string> args;  // after `serve --port 0 --data-dir <dir>`
  std::vector<std::string> env;   // "NAME=value"
  std::chrono::milliseconds startTimeout = 10s;
};

// `webhooker serve --port 0 --data-dir <dataDir>`, started in the
// constructor, which returns once the daemon printed its listening line.
// stdout is read by a thread into a buffer; stderr (the log) goes to a file.
// Neither is a terminal, so a generated admin token is written to
// <dataDir>/admin-token.txt, where adminToken() reads it.
// The destructor SIGKILLs a daemon still running.
class DaemonProcess {
 public:
  explicit DaemonProcess(const std::filesystem::path& dataDir, DaemonOptions options = {});
  ~DaemonProcess();

  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://" + host_ + ":" + std::to_string(port_); }
  pid_t pid() const { return pid_; }
  bool running() const { return !exitStatus_; }
  // The token the daemon generated on this start (a first start); nullopt
  // when it generated none.
  const std::optional<std::string>& adminToken() const { return adminToken_; }

  std::string stdoutText() const;
  std::string stderrText() const;

  // SIGTERM, then waits; returns the exit status (0 is a clean stop). A
  // daemon still running after `timeout` is SIGKILLed and -1 returned, so a
  // test asserting 0 fails. Afterwards stdoutText() holds all it printed.
  int stop(std::chrono::milliseconds timeout = 10s);

  // An unclean death: no chance to finish anything. Returns 128 + 9.
  int kill9();

 private:
  // Polls rather than blocking in read(): a grandchild that inherited the
  // pipe (a wrapper script as WEBHOOKER_BIN) could keep it open forever, and
  // the destructor must still be able to join.
  void readStdout();

  void stopReader();

  // The first line of the token file; nullopt when there is none.
  std::optional<std::string> readTokenFile() const;

  // Parses the port once the listening line is complete; false on timeout
  // or if the daemon exited first.
  bool waitUntilListening(std::chrono::milliseconds timeout);

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
