// The correctness check every scenario ends with, read straight from the
// events DBs with SQLite: every acknowledged event is stored with exactly one
// delivery per target, and every delivery the DB calls `delivered` reached
// that target's receiver. A benchmark that loses events is no benchmark.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/receiver.h"

namespace webhooker::bench {

struct WebhookExpectation {
  std::string id;
  std::vector<std::string> targetIds;
  std::vector<int64_t> acceptedSeqs;  // X-Bench-Seq of every acknowledged event
};

struct CorrectnessSpec {
  std::filesystem::path dataDir;
  std::vector<WebhookExpectation> webhooks;
  std::map<std::string, const BenchReceiver*> receivers;  // by target id
  std::set<std::string> drainedTargets;  // the scenario waited for all their deliveries
};

// Each violation as one readable line; empty when everything holds.
std::vector<std::string> checkCorrectness(const CorrectnessSpec& spec);

}  // namespace webhooker::bench
