// LoadGenerator: keeps a fixed number of keep-alive, TCP_NODELAY connections
// busy POSTing bodies to one URL, and records every request's latency.
//
// Two modes: closed loop (`rate` 0: each connection sends its next request
// as soon as the previous answer arrived) and fixed rate (request i is due at
// start + i/rate; its latency counts from when it was due, so a stalled
// server cannot hide its queueing delay). Every request carries a unique
// X-Bench-Seq number, starting at `firstSeq`.
//
// Threading: run() blocks, using one thread per connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/receiver.h"

namespace webhooker::bench {

// How the requests of a LoadSpec with `paths` pick their path: the same way
// in every run.
enum class PathSpread {
  kUniform,  // at random: a hash of the request's number
  kInOrder,  // request i to paths[i % paths.size()]: each path once per paths.size()
  kZipf,     // at random by Zipf's law (s = 1): the k-th path gets 1/k of the first's share
};

struct LoadSpec {
  std::string baseUrl;  // http://127.0.0.1:port
  std::string path;     // /hooks/<uuid>
  // If set, request i goes to paths[pathIndexOf(spec, i)] instead.
  std::vector<std::string> paths;
  PathSpread spread = PathSpread::kUniform;
  int connections = 8;
  size_t requests = 0;  // how many to send in all
  double rate = 0;      // requests per second in all; 0 = closed loop
  int64_t firstSeq = 0;
  // A request without an answer by then failed; at a fixed rate, so does one
  // that could not be sent by then.
  std::chrono::seconds readTimeout{30};
  // If set, every request is signed with it as a Standard Webhooks sender
  // does (webhook-id, webhook-timestamp, webhook-signature), at send time.
  std::string signingSecret;
};

struct RequestOutcome {
  int64_t seq = 0;
  int status = 0;       // 0: no answer (connection error)
  SteadyTime due;       // when it was due (fixed rate) or sent (closed loop)
  double latencyMs = 0;
};

struct LoadResult {
  std::vector<RequestOutcome> requests;  // in seq order
  double seconds = 0;                    // first send to last answer
  size_t ok() const;                     // 2xx answers
  std::vector<int64_t> acceptedSeqs() const;  // the seqs answered 200: stored events
  double ratePerSecond() const { return seconds > 0 ? static_cast<double>(ok()) / seconds : 0; }
  // 2xx answers a second between the 10th and the 90th percentile of their
  // arrival: the rate once connections are up and threads have started, and
  // before the last few stragglers. A short run's whole-run rate mostly
  // measures that warm-up, which differs between servers.
  double steadyRatePerSecond() const;
  // Latency percentile (0–100) over the 2xx answers, in ms.
  double latencyPercentile(double p) const;
};

LoadResult runLoad(const LoadSpec& spec, const std::vector<std::string>& bodies);

// Which of `spec.paths` request `i` goes to, by `spec.spread`.
size_t pathIndexOf(const LoadSpec& spec, size_t i);

// A fresh range of `n` X-Bench-Seq numbers, unique in the process.
int64_t reserveSeqs(size_t n);

// The p-th percentile (0–100) of `values`, nearest rank; 0 when empty.
double percentile(std::vector<double> values, double p);

}  // namespace webhooker::bench
