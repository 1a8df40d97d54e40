// JqSandbox: runs jq programs (libjq) in a small pool of worker processes
// (jq_worker.h), so that a program that loops or allocates without end costs
// one worker, never a thread of ours: libjq has no interrupt, and a runaway
// jq_next() can only be stopped from outside its process.
//
// A call takes an idle worker when it is its webhook's turn (jq_shares.h:
// webhooks take turns, one over its share of the workers' time goes last,
// and one whose programs keep overrunning their budget is throttled), waiting at most kQueueBudgets budgets for one: under a
// burst, a legitimate program waits its turn rather than fail. A call that
// gets no worker (the wait ran out, its webhook is throttled) fails
// "jq_busy": the caller retries it, it says nothing of the program. One that
// gets a worker sends the program and its input, and waits for the answer
// for `timeout`; past it the worker is killed and a fresh one started in the
// background, which compiles the programs the killed one held (but the one
// that overran) before it takes calls. A webhook with strikes (its programs
// overran lately) runs at nice kStruckNice, on spare CPU only, and the worker
// then retires. So a runaway program holds a worker for one budget, and a
// caller never waits longer than its queue allowance plus one budget,
// whatever the program does. Compiling is not running: a worker compiles a
// program once (libjq 1.6 compiles its builtins with it, tens of
// milliseconds) within kCompileTimeout, which programs capped at
// kMaxProgramLength (routing_rules.h) never come near; the budget then
// bounds the run. A worker that dies meanwhile (its memory limit,
// a crash) fails its call the same way. Workers are this binary started
// again (`executable`, with jq::kWorkerArgument) with an empty environment,
// cwd "/", stderr to /dev/null, their own address-space and CPU limits.
//
// Threading: every method from any thread; idle workers and the respawn
// queue are guarded by poolMutex_, a worker in use belongs to its caller.
// Errors (Error::code): error_code::kJqError (the program does not compile,
// or failed; jq's message), kJqTimeout, kJqMemory (its worker died: memory
// limit or crash), kJqBusy (no worker for it in time), kJqUnavailable (no
// worker could be started). Only the first three are the program's own outcome;
// isRetryable() tells the others.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "routing/jq_shares.h"

namespace webhooker {

namespace jq_error {
// The call never ran the program (error_code::kJqBusy, kJqUnavailable):
// retry it later, it is no verdict.
inline bool isRetryable(const Error& e) {
  return e.code == error_code::kJqBusy || e.code == error_code::kJqUnavailable;
}
}  // namespace jq_error

inline constexpr std::chrono::seconds kCompileTimeout{5};
// The nice value a worker runs a struck webhook's call at (and then retires:
// an unprivileged process cannot raise its priority again).
inline constexpr int kStruckNice = 19;
inline constexpr int kQueueBudgets = 10;
// How many of a replaced worker's programs its replacement compiles before
// it takes calls.
inline constexpr size_t kWarmPrograms = 8;

struct JqSandboxOptions {
  int workers = 2;
  std::chrono::milliseconds timeout{100};  // per run
  size_t memoryBytes = 512u * 1024 * 1024;  // address space of a worker
  int cpuSeconds = 60;  // a worker's CPU allowance before it is replaced
  std::string executable = "/proc/self/exe";
};

// What a program gave: its outputs as compact JSON text, at most two (a
// third is never computed: callers only tell none, one and several apart).
struct JqOutputs {
  std::vector<std::string> texts;
};

class JqSandbox {
 public:
  // Starts the workers (and fails with "jq_unavailable" if none starts).
  static Result<std::unique_ptr<JqSandbox>> start(JqSandboxOptions options);
  // Kills the workers.
  ~JqSandbox();
  JqSandbox(const JqSandbox&) = delete;
  JqSandbox& operator=(const JqSandbox&) = delete;

  // Compiles `program` (a check when it is saved).
  Result<void> compile(std::string_view program);
  // Runs `program` on `input` (JSON text) for `tenant`, the webhook whose
  // share of the workers it uses ("" for the admin API's own runs).
  Result<JqOutputs> run(std::string_view program, std::string_view input,
                        std::string_view tenant = {});

  const JqSandboxOptions& options() const { return options_; }

 private:
  struct Worker {
    pid_t pid = -1;
    int channel = -1;  // our end of the socket pair, non-blocking
    // What its cache holds (jq_worker.cpp keeps the same, by the same rule).
    std::shared_ptr<std::unordered_set<std::string>> compiled;
  };

  explicit JqSandbox(JqSandboxOptions options);
  Result<Worker> spawn() const;
  Result<JqOutputs> call(uint8_t op, std::string_view program, std::string_view input,
                         std::string_view tenant);
  // An idle worker, once it is `tenant`'s turn; "jq_busy" if none comes.
  // `struck`: the webhook has strikes (jq_shares.h).
  Result<Worker> take(std::string_view tenant, bool& struck);
  // Compiles `program` in `worker` unless it has; kCompileTimeout.
  Result<void> compileIn(Worker& worker, std::string_view program, bool& retiring);
  // Sends the request and reads the reply on `worker` by `deadline`; sets
  // `retiring` when the worker said it leaves after this reply.
  Result<JqOutputs> exchange(const Worker& worker, uint8_t op, std::string_view program,
                             std::string_view input,
                             std::chrono::steady_clock::time_point deadline, bool& retiring);
  // Kills (if needed) and reaps `worker`, and asks for a replacement.
  void replace(Worker worker);
  void respawnLoop(std::stop_token stop);

  const JqSandboxOptions options_;
  Mutex poolMutex_;
  std::condition_variable_any workerIdle_;
  std::condition_variable_any respawnWanted_;
  JqShares shares_ GUARDED_BY(poolMutex_);
  std::vector<Worker> idle_ GUARDED_BY(poolMutex_);
  std::vector<Worker> dead_ GUARDED_BY(poolMutex_);  // to reap, each replaced
  std::jthread respawner_;
};

}  // namespace webhooker
