// Steps several scenarios share: seeding a webhook's backlog, draining it
// through a fresh daemon, and posting a load through a fresh daemon.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/correctness.h"
#include "bench/daemon.h"
#include "bench/load_generator.h"
#include "bench/receiver.h"
#include "bench/scenarios.h"
#include "bench/seeder.h"

namespace webhooker::bench {

// One webhook with `n` events numbered from a fresh seq range (see
// Seeder::addEvents); returns what the correctness check expects of it.
WebhookExpectation seedWebhook(Seeder& seeder, const std::string& name,
                               const std::vector<SeedTarget>& targets, size_t n,
                               const std::vector<std::string>& bodies,
                               std::optional<TimePoint> retryAt = std::nullopt);

// The port of a base URL such as http://127.0.0.1:8080.
int portOf(const std::string& url);

// Receivers for several targets of one webhook: each needs its own, or the
// check would see every event arrive at it once per target.
using ReceiverSet = std::vector<std::unique_ptr<BenchReceiver>>;
ReceiverSet makeReceivers(size_t count, int threads, std::chrono::milliseconds delay = {});

// Adds the correctness check as `scenario`, after a wait for deliveries
// that ended at the cap unless `waitFinished`. Running out of time is a
// violation of its own, ahead of the deliveries the check finds undone.
void addCheckAfterWait(Report& report, const std::string& scenario, const BenchConfig& config,
                       bool waitFinished, const CorrectnessSpec& spec);

struct Drain {
  bool drained = false;  // `receiver` got all `n` before the cap
  SteadyTime end;        // when the wait ended
  double daemonCpuSeconds = 0;  // the daemon's, from its start to the end of the wait
  // The receiver's rate; an unfinished drain counts its wait up to `end`.
  double rate(const BenchReceiver& receiver) const;
};

// Starts the daemon on `dataDir`, waits until `receiver` has `n` requests or
// the config's drain cap passed, then stops it.
Drain drainBacklog(const BenchConfig& config, const std::filesystem::path& dataDir,
                   const BenchReceiver& receiver, size_t n);

// A backlog delivered to several receivers, each expecting its own count.
struct ExpectedArrivals {
  const BenchReceiver* receiver;
  size_t count;
};
// As above, until every receiver has its count (or the cap passed). The
// rate is over all receivers' arrivals, from the first to the last (or to
// the end of an unfinished wait).
struct MultiDrain {
  bool drained = false;
  double rate = 0;
  double daemonCpuSeconds = 0;  // as Drain's
};
MultiDrain drainBacklog(const BenchConfig& config, const std::filesystem::path& dataDir,
                        const std::vector<ExpectedArrivals>& expected);

// The end-to-end load: the config's connections posting at endToEndRate for
// endToEndSeconds (where to, and the seqs, are the caller's).
LoadSpec endToEndLoad(const BenchConfig& config);

// Per acknowledged request of `load`: its arrival at `receiver` minus when
// it was due, ms (a request that has not arrived is left out).
std::vector<double> deliveryLatencies(const LoadResult& load, const BenchReceiver& receiver);

// How a scenario posts its load once the daemon is up (by default: runLoad).
using LoadRunner = std::function<LoadResult(BenchDaemon& daemon, const LoadSpec& spec)>;

// What the loaded webhook delivers each event to.
struct LoadTarget {
  enum class Kind {
    kNone,      // no target: the front door and the commit alone
    kHttp,      // an http target posting to `receiver`
    kDatabase,  // a database target, recording each event where it is stored
  };
  Kind kind = Kind::kNone;
  BenchReceiver* receiver = nullptr;  // kHttp only

  static LoadTarget none() { return {}; }
  static LoadTarget http(BenchReceiver& receiver) { return {Kind::kHttp, &receiver}; }
  static LoadTarget database() { return {Kind::kDatabase, nullptr}; }
};

// Posts `spec`'s load through a fresh daemon (started with `extraArgs`) to a
// webhook whose one target is `target`, waits for the deliveries (up to the
// cap) and adds the correctness check as `scenario`: every acknowledged
// event stored, with its delivery delivered (and received once, with the
// stored body, for an http target). `routing` applies to an http target.
LoadResult loadThroughDaemon(const BenchConfig& config, LoadSpec spec, LoadTarget target,
                             const std::string& scenario, Report& report,
                             std::vector<std::string> extraArgs = {},
                             const LoadRunner& runner = nullptr,
                             const nlohmann::json& routing = nlohmann::json::object());

// A LoadRunner that posts the load, waits for `receiver` (if given) to have
// every acknowledged event, and sets `cpuPerEvent` to the CPU seconds the
// daemon tree and this process spent per acknowledged event meanwhile.
LoadRunner measuringCpu(const BenchConfig& config, BenchReceiver* receiver, double& cpuPerEvent);

}  // namespace webhooker::bench
