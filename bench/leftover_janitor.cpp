#include "bench/leftover_janitor.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace webhooker::bench {

namespace {

namespace fs = std::filesystem;

// Processes (other than this one) whose command line mentions `scratch`.
std::vector<pid_t> processesUsing(const fs::path& scratch) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream file(entry.path() / "cmdline", std::ios::binary);
    const std::string cmdline{std::istreambuf_iterator<char>(file), {}};
    const pid_t pid = std::stoi(name);
    if (pid != ::getpid() && cmdline.find(scratch.string()) != std::string::npos)
      found.push_back(pid);
  }
  return found;
}

// Whether the process still runs: it exists and is not a zombie (they are
// not our children, so whoever adopted them reaps them, maybe late).
bool running(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(file, stat);
  const size_t close = stat.rfind(')');  // "pid (comm) state ...": comm may hold ')'
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// SIGKILLs them and waits (up to 5 s) until they have ended, so nothing
// holds or writes the folder when it is removed.
size_t killAll(const std::vector<pid_t>& pids) {
  for (const pid_t pid : pids) ::kill(pid, SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (const pid_t pid : pids)
    while (running(pid) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return pids.size();
}

[[noreturn]] void runJanitor(int lifeline, const fs::path& scratch) {
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGTERM, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);
  char byte = 0;
  ssize_t r = 0;
  while ((r = ::read(lifeline, &byte, 1)) != 0 && (r > 0 || errno == EINTR)) {
  }
  std::error_code ec;
  if (fs::exists(scratch, ec)) {
    const size_t killed = killAll(processesUsing(scratch));
    fs::remove_all(scratch, ec);
    std::fprintf(stderr, "bench: the run ended early: %zu process(es) killed, %s removed\n", killed,
                 scratch.c_str());
  }
  ::_exit(0);
}

}  // namespace

LeftoverJanitor::LeftoverJanitor() {
  std::string pattern = (fs::temp_directory_path() / "webhooker-bench-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("cannot create a scratch folder in " +
                             fs::temp_directory_path().string());
  scratch_ = pattern;
  ::setenv("TMPDIR", scratch_.c_str(), 1);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("cannot create the janitor's pipe");
  const pid_t janitor = ::fork();
  if (janitor < 0) throw std::runtime_error("cannot start the janitor");
  if (janitor == 0) {
    ::close(fds[1]);
    runJanitor(fds[0], scratch_);
  }
  ::close(fds[0]);
  lifeline_ = fds[1];
}

LeftoverJanitor::~LeftoverJanitor() {
  std::error_code ec;
  fs::remove_all(scratch_, ec);  // before the janitor wakes: it then finds nothing to do
  ::close(lifeline_);
}

}  // namespace webhooker::bench
