// The correctness check every scenario ends with, read straight from the
// events DBs with SQLite: every acknowledged event is stored with exactly one
// delivery per target; every delivery the DB calls `delivered` reached that
// target's receiver once, with the stored body; the receivers got nothing
// else; and the deliveries of a drained target are all delivered. A
// benchmark that loses events is no benchmark, and a check that has nothing
// to check (no acknowledged event) is a violation, not a pass.
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
  // By target id. Targets of different webhooks may share a receiver; two
  // targets of one webhook may not (each event would arrive there twice).
  std::map<std::string, const BenchReceiver*> receivers;
  // The scenario waited for all their deliveries: each must be delivered,
  // whether or not the wait ended in time.
  std::set<std::string> drainedTargets;
  // A transform reshapes what they receive: their bodies are not compared.
  std::set<std::string> reshapedTargets;
};

// Each violation as one readable line; empty when everything holds.
std::vector<std::string> checkCorrectness(const CorrectnessSpec& spec);

}  // namespace webhooker::bench
