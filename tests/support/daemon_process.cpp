#include "tests/support/daemon_process.h"

namespace webhooker::testing {

namespace {

// The host and port of "webhooker listening on http://<host>:<port>...\n"
// once that line is complete in `text`.
struct ListeningAddress {
  std::string host;
  int port = 0;
};

std::optional<ListeningAddress> listeningAddress(const std::string& text) {
  static constexpr std::string_view kPrefix = "webhooker listening on http://";
  for (size_t at = text.find(kPrefix); at != std::string::npos; at = text.find(kPrefix, at + 1)) {
    const size_t hostAt = at + kPrefix.size();
    const size_t lineEnd = text.find('\n', hostAt);
    if (lineEnd == std::string::npos) return std::nullopt;  // not complete yet
    const std::string address = text.substr(hostAt, text.find_first_of(" \n", hostAt) - hostAt);
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos || colon == 0) continue;
    const std::string digits = address.substr(colon + 1);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    return ListeningAddress{address.substr(0, colon), std::stoi(digits)};
  }
  return std::nullopt;
}

}  // namespace

std::string webhookerBin() {
  const char* bin = std::getenv("WEBHOOKER_BIN");
  if (!bin || !*bin) throw std::runtime_error("WEBHOOKER_BIN is not set; run through meson test");
  return bin;
}

Pipe makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  return {Fd(fds[0]), Fd(fds[1])};
}

bool isWebhookerVariable(const std::string& name) {
  return name.rfind("WEBHOOKER_", 0) == 0 || name.rfind("METRICS_", 0) == 0 ||
         name == "DATA_DIR" || name == "PORT" || name == "DEBUG";
}

std::vector<std::string> childEnvironment(const std::vector<std::string>& extra) {
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

CStringArray::CStringArray(std::vector<std::string> strings) : strings_(std::move(strings)) {
  for (std::string& s : strings_) pointers_.push_back(s.data());
  pointers_.push_back(nullptr);
}

pid_t spawnChild(const std::vector<std::string>& args, const std::vector<std::string>& env,
                 int stdoutFd, int stderrFd, int stdinFd) {
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

int decodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::optional<int> waitFor(pid_t pid, std::chrono::milliseconds timeout) {
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

void appendAvailable(int fd, std::string& out, bool& open) {
  char buffer[4096];
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n > 0) out.append(buffer, static_cast<size_t>(n));
  else if (n == 0 || errno != EINTR) open = false;
}

CommandResult runCommand(const std::vector<std::string>& args, const std::vector<std::string>& env,
                         std::chrono::milliseconds timeout, std::string_view input) {
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

CommandResult runWebhooker(std::vector<std::string> args, const std::vector<std::string>& env,
                           std::string_view input) {
  args.insert(args.begin(), webhookerBin());
  return runCommand(args, env, 30s, input);
}

DaemonProcess::DaemonProcess(const std::filesystem::path& dataDir, DaemonOptions options)
    : stderrPath_(logDir_ / "stderr.log"), tokenFile_(dataDir / "admin-token.txt") {
  const std::optional<std::string> tokenBefore = readTokenFile();
  std::vector<std::string> args = {webhookerBin(), "serve",         "--port", "0",
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

DaemonProcess::~DaemonProcess() {
  kill9();
  stopReader();
}

std::string DaemonProcess::stdoutText() const {
  std::lock_guard lock(stdoutMutex_);
  return stdoutBuffer_;
}

std::string DaemonProcess::stderrText() const {
  std::ifstream in(stderrPath_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int DaemonProcess::stop(std::chrono::milliseconds timeout) {
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

int DaemonProcess::kill9() {
  if (!running()) return *exitStatus_;
  ::kill(pid_, SIGKILL);
  exitStatus_ = waitFor(pid_, 10s).value_or(-1);
  return *exitStatus_;
}

void DaemonProcess::readStdout() {
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

void DaemonProcess::stopReader() {
  stopReading_ = true;
  if (reader_.joinable()) reader_.join();
}

std::optional<std::string> DaemonProcess::readTokenFile() const {
  std::ifstream in(tokenFile_);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

bool DaemonProcess::waitUntilListening(std::chrono::milliseconds timeout) {
  std::unique_lock lock(stdoutMutex_);
  std::optional<ListeningAddress> address;
  stdoutChanged_.wait_for(lock, timeout, [&] {
    address = listeningAddress(stdoutBuffer_);
    return address || stdoutEof_;
  });
  if (!address) return false;
  host_ = address->host;
  port_ = address->port;
  return true;
}

}  // namespace webhooker::testing
