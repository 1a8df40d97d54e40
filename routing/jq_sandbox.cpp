#include "routing/jq_sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/thread_name.h"
#include "routing/jq_protocol.h"

namespace webhooker {

namespace {

using Deadline = std::chrono::steady_clock::time_point;

constexpr std::chrono::seconds kStartTimeout{10};

int millisecondsLeft(Deadline deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Waits until `fd` is ready for `events` or the deadline passes.
bool waitReady(int fd, short events, Deadline deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int left = millisecondsLeft(deadline);
    const int n = ::poll(&p, 1, left);
    if (n > 0) return true;
    if (n == 0 || (n < 0 && errno != EINTR)) return false;
  }
}

Error timedOut() {
  return makeError(error_code::kJqTimeout, "the jq program did not finish within its time budget");
}

Error workerGone() {
  return makeError(error_code::kJqMemory,
                   "the jq program stopped its worker (memory budget exceeded or crash)");
}

// Sends all of `data` by the deadline; errors as timedOut/workerGone.
Result<void> sendAll(int fd, std::string_view data, Deadline deadline) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!waitReady(fd, POLLOUT, deadline)) return timedOut();
      continue;
    }
    return workerGone();
  }
  return {};
}

Result<void> receiveAll(int fd, char* out, size_t size, Deadline deadline) {
  while (size > 0) {
    const ssize_t n = ::recv(fd, out, size, 0);
    if (n > 0) {
      out += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!waitReady(fd, POLLIN, deadline)) return timedOut();
      continue;
    }
    return workerGone();  // EOF: the worker died
  }
  return {};
}

Result<uint32_t> receiveSize(int fd, Deadline deadline) {
  uint32_t n = 0;
  if (auto r = receiveAll(fd, reinterpret_cast<char*>(&n), sizeof n, deadline); !r)
    return r.error();
  if (n > jq::kMaxFrameText) return workerGone();
  return n;
}

}  // namespace

JqSandbox::JqSandbox(JqSandboxOptions options)
    : options_(std::move(options)), shares_(options_.workers, options_.timeout) {}

Result<std::unique_ptr<JqSandbox>> JqSandbox::start(JqSandboxOptions options) {
  std::unique_ptr<JqSandbox> sandbox(new JqSandbox(std::move(options)));
  std::vector<Worker> started;
  for (int i = 0; i < std::max(1, sandbox->options_.workers); ++i) {
    auto worker = sandbox->spawn();
    if (!worker) {
      for (Worker& w : started) sandbox->replace(w);  // reaped by the destructor
      return worker.error();
    }
    started.push_back(worker.value());
  }
  {
    MutexLock lock(sandbox->poolMutex_);
    sandbox->idle_ = std::move(started);
  }
  JqSandbox* self = sandbox.get();
  sandbox->respawner_ = std::jthread([self](std::stop_token st) { self->respawnLoop(st); });
  return sandbox;
}

JqSandbox::~JqSandbox() {
  respawner_ = std::jthread();  // stops and joins; nothing is spawned after this
  MutexLock lock(poolMutex_);
  for (Worker& w : idle_) dead_.push_back(w);
  for (Worker& w : dead_) {
    ::kill(w.pid, SIGKILL);
    if (w.channel >= 0) ::close(w.channel);
    ::waitpid(w.pid, nullptr, 0);
  }
}

Result<JqSandbox::Worker> JqSandbox::spawn() const {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return makeError(error_code::kJqUnavailable,
                     std::string("no socket for a jq worker: ") + std::strerror(errno));
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_adddup2(&files, fds[1], 0);  // dup2 clears close-on-exec
  posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, 2, "/dev/null", O_WRONLY, 0);
  // Nothing else of ours (sockets, databases, the data folder's lock) may
  // live on in a worker, whatever its close-on-exec flag.
  posix_spawn_file_actions_addclosefrom_np(&files, 3);
  posix_spawn_file_actions_addchdir_np(&files, "/");
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigfillset(&defaults);
  posix_spawnattr_setsigmask(&attr, &none);  // our threads block the signals a watcher waits for
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  const std::string memory = std::to_string(options_.memoryBytes);
  const std::string cpu = std::to_string(options_.cpuSeconds);
  std::string arg0 = "webhooker-jq";
  std::string arg1 = jq::kWorkerArgument;
  char* argv[] = {arg0.data(), arg1.data(), const_cast<char*>(memory.c_str()),
                  const_cast<char*>(cpu.c_str()), nullptr};
  char* envp[] = {nullptr};  // a program's `env` sees nothing of ours
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, options_.executable.c_str(), &files, &attr, argv, envp);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (spawned != 0) {
    ::close(fds[0]);
    return makeError(
        error_code::kJqUnavailable,
        "cannot start a jq worker (" + options_.executable + "): " + std::strerror(spawned));
  }
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  // Only a worker that has started takes calls: starting one (loading the
  // binary) may take longer than a call's budget.
  char ready = 0;
  if (!receiveAll(fds[0], &ready, 1, std::chrono::steady_clock::now() + kStartTimeout)) {
    ::kill(pid, SIGKILL);
    ::close(fds[0]);
    ::waitpid(pid, nullptr, 0);
    return makeError(error_code::kJqUnavailable,
                     "a jq worker (" + options_.executable + ") did not start");
  }
  return Worker{pid, fds[0], std::make_shared<std::unordered_set<std::string>>()};
}

Result<void> JqSandbox::compile(std::string_view program) {
  auto r = call(static_cast<uint8_t>(jq::Op::kCompile), program, "", "");
  if (!r) return r.error();
  return {};
}

Result<void> JqSandbox::compileIn(Worker& worker, std::string_view program, bool& retiring) {
  const std::string text(program);
  if (worker.compiled->count(text)) return {};
  if (worker.compiled->size() >= jq::kMaxCompiled) worker.compiled->clear();
  auto r = exchange(worker, static_cast<uint8_t>(jq::Op::kCompile), program, "",
                    std::chrono::steady_clock::now() + kCompileTimeout, retiring);
  if (!r) return r.error();
  worker.compiled->insert(text);
  return {};
}

Result<JqOutputs> JqSandbox::run(std::string_view program, std::string_view input,
                                 std::string_view tenant) {
  return call(static_cast<uint8_t>(jq::Op::kRun), program, input, tenant);
}

Result<JqSandbox::Worker> JqSandbox::take(std::string_view tenant, bool& struck) {
  using std::chrono::steady_clock;
  MutexLock lock(poolMutex_);
  shares_.waiting(tenant, steady_clock::now());
  std::optional<steady_clock::time_point> throttled;
  const bool turn =
      workerIdle_.wait_for(lock, options_.timeout * kQueueBudgets, [&]() REQUIRES(poolMutex_) {
        const auto now = steady_clock::now();
        throttled = shares_.throttledUntil(tenant, now);
        return throttled || (!idle_.empty() && shares_.isTurnOf(tenant, now));
      });
  if (!turn || throttled) {
    shares_.gaveUp(tenant, steady_clock::now());
    workerIdle_.notify_all();  // the turn may be another webhook's now
    if (!throttled) return makeError(error_code::kJqBusy, "no jq worker was free in time");
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*throttled - steady_clock::now());
    return makeError(error_code::kJqBusy,
                     "this webhook's jq programs keep overrunning their budget: throttled for " +
                         std::to_string(left.count()) + " ms");
  }
  struck = shares_.struck(tenant);
  shares_.took(tenant, steady_clock::now());
  Worker worker = idle_.back();
  idle_.pop_back();
  if (!idle_.empty()) workerIdle_.notify_all();  // the next turn, if it is another's
  return worker;
}

Result<JqOutputs> JqSandbox::call(uint8_t op, std::string_view program, std::string_view input,
                                  std::string_view tenant) {
  if (program.size() > jq::kMaxFrameText || input.size() > jq::kMaxFrameText)
    return makeError(error_code::kJqError, "the program or its input is too large");
  bool struck = false;
  auto taken = take(tenant, struck);
  if (!taken) return taken.error();
  const auto takenAt = std::chrono::steady_clock::now();
  Worker worker = taken.value();
  bool retiring = false;  // a worker retires only after a run
  // A webhook whose programs overran lately runs on spare CPU only: the
  // event loop, the commits and the other webhooks' runs go first.
  if (struck) ::setpriority(PRIO_PROCESS, static_cast<id_t>(worker.pid), kStruckNice);
  Result<JqOutputs> result = JqOutputs{};
  if (auto compiled = compileIn(worker, program, retiring); !compiled) {
    result = compiled.error();
  } else if (op == static_cast<uint8_t>(jq::Op::kRun)) {
    result = exchange(worker, op, program, input,
                      std::chrono::steady_clock::now() + options_.timeout, retiring);
  }
  const bool overran = !result && result.error().code != error_code::kJqError;
  {
    MutexLock lock(poolMutex_);
    const auto now = std::chrono::steady_clock::now();
    shares_.returned(tenant, overran, now - takenAt, now);
  }
  // The replacement compiles what this worker held, but a program that
  // overran or ran at low priority: its own webhook compiles it again.
  if (overran || struck) worker.compiled->erase(std::string(program));
  if (overran) {
    spdlog::warn("jq.worker_replaced pid={} reason={}", worker.pid, result.error().code);
    replace(worker);
  } else if (retiring || struck) {
    replace(worker);
  } else {
    MutexLock lock(poolMutex_);
    idle_.push_back(worker);
  }
  // A returned share may make it another webhook's turn, even before the
  // replacement worker is up.
  workerIdle_.notify_all();
  return result;
}

Result<JqOutputs> JqSandbox::exchange(const Worker& worker, uint8_t op, std::string_view program,
                                      std::string_view input, Deadline deadline,
                                      bool& retiring) {
  std::string frame;
  frame.reserve(9 + program.size() + input.size());
  frame.push_back(static_cast<char>(op));
  const uint32_t sizes[2] = {static_cast<uint32_t>(program.size()),
                             static_cast<uint32_t>(input.size())};
  frame.append(reinterpret_cast<const char*>(sizes), sizeof sizes);
  frame += program;
  frame += input;
  if (auto sent = sendAll(worker.channel, frame, deadline); !sent) return sent.error();

  char head[2];
  if (auto r = receiveAll(worker.channel, head, sizeof head, deadline); !r) return r.error();
  retiring = head[1] != 0;
  auto count = receiveSize(worker.channel, deadline);
  if (!count) return count.error();
  if (count.value() > jq::kMaxOutputs) return workerGone();
  JqOutputs outputs;
  for (uint32_t i = 0; i < count.value(); ++i) {
    auto size = receiveSize(worker.channel, deadline);
    if (!size) return size.error();
    std::string text(size.value(), '\0');
    if (auto r = receiveAll(worker.channel, text.data(), text.size(), deadline); !r)
      return r.error();
    outputs.texts.push_back(std::move(text));
  }
  if (static_cast<jq::Outcome>(head[0]) == jq::Outcome::kError)
    return makeError(error_code::kJqError, outputs.texts.empty() ? "jq failed" : outputs.texts[0]);
  return outputs;
}

void JqSandbox::replace(Worker worker) {
  ::kill(worker.pid, SIGKILL);  // not reaped yet, so the pid is still this worker's
  ::close(worker.channel);
  worker.channel = -1;
  MutexLock lock(poolMutex_);
  dead_.push_back(worker);
  respawnWanted_.notify_one();
}

void JqSandbox::respawnLoop(std::stop_token stop) {
  nameThisThread("wh-jq-respawn");
  size_t missing = 0;
  std::vector<std::string> warm;  // what the replaced workers held
  while (!stop.stop_requested()) {
    std::vector<Worker> dead;
    {
      MutexLock lock(poolMutex_);
      respawnWanted_.wait(lock, stop, [&]() REQUIRES(poolMutex_) {
        return !dead_.empty() || missing > 0;
      });
      dead.swap(dead_);
    }
    for (const Worker& w : dead) {
      ::waitpid(w.pid, nullptr, 0);
      for (const std::string& program : *w.compiled)
        if (warm.size() < kWarmPrograms &&
            std::find(warm.begin(), warm.end(), program) == warm.end())
          warm.push_back(program);
    }
    missing += dead.size();
    while (missing > 0 && !stop.stop_requested()) {
      auto worker = spawn();
      if (!worker) {
        spdlog::error("jq.worker_start_failed error=\"{}\"", worker.error().message);
        break;  // tried again on the next wake-up or after a pause
      }
      --missing;
      // Compiled here, not on the next caller's time (tens of ms each).
      bool retiring = false;  // a worker retires only after a run
      bool warmed = true;
      for (const std::string& program : warm) {
        if (stop.stop_requested()) break;  // the destructor kills it with the idle ones
        auto compiled = compileIn(worker.value(), program, retiring);
        warmed = compiled || compiled.error().code == error_code::kJqError;
        if (!warmed) break;
      }
      if (!warmed) {  // it died or hung compiling: its replacement starts cold
        warm.clear();
        replace(worker.value());
        continue;
      }
      MutexLock lock(poolMutex_);
      idle_.push_back(worker.value());
      workerIdle_.notify_all();
    }
    if (missing == 0) warm.clear();
    if (missing > 0) {
      MutexLock lock(poolMutex_);
      respawnWanted_.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
    }
  }
}

}  // namespace webhooker
