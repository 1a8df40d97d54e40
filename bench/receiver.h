// BenchReceiver: a fast loopback webhook receiver on 127.0.0.1:<free port>.
// Keep-alive, TCP_NODELAY, a pool of server threads; it answers 200 (after
// an optional delay, to play a slow target) and records each request's
// X-Bench-Seq header with its steady-clock arrival time and a hash of its
// body, for the latency figures and the correctness check.
//
// Threading: handlers run on the server's pool; every public method may be
// called from any thread. arrivalsMutex_ guards arrivals_.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

namespace webhooker::bench {

using SteadyTime = std::chrono::steady_clock::time_point;

// The header the load generator numbers its requests with; the daemon
// forwards it with the event.
inline constexpr const char* kSeqHeader = "X-Bench-Seq";

struct Arrival {
  int64_t seq = -1;  // -1: the request carried no X-Bench-Seq
  SteadyTime at;
  uint64_t bodyHash = 0;  // bodyHash() of what arrived
};

// FNV-1a: the correctness check compares each delivered body with the
// stored one without keeping either.
uint64_t bodyHash(std::string_view body);

class BenchReceiver {
 public:
  explicit BenchReceiver(int threads = 8, std::chrono::milliseconds delay = {});
  ~BenchReceiver();
  BenchReceiver(const BenchReceiver&) = delete;
  BenchReceiver& operator=(const BenchReceiver&) = delete;

  int port() const { return port_; }
  std::string url() const;
  size_t count() const { return count_.load(); }
  // True once `n` requests arrived, false at the timeout.
  bool waitForCount(size_t n, std::chrono::milliseconds timeout) const;
  std::vector<Arrival> arrivals() const;
  // Requests per second from the first arrival to the last one, or to `end`
  // when given (a drain that did not finish: its stalls count too).
  double arrivalRate(std::optional<SteadyTime> end = std::nullopt) const;
  // The longest time between two consecutive arrivals (0 with fewer than
  // two): a drain's stall, which a rate over seconds can hide.
  std::chrono::duration<double, std::milli> longestPause() const;

 private:
  const std::chrono::milliseconds delay_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<size_t> count_{0};
  mutable std::mutex arrivalsMutex_;
  mutable std::condition_variable arrived_;
  // The smallest count a waitForCount() waits for: arrived_ is notified
  // when it is reached.
  static constexpr size_t kNoneAwaited = std::numeric_limits<size_t>::max();
  mutable size_t awaited_ = kNoneAwaited;
  std::vector<Arrival> arrivals_;
};

}  // namespace webhooker::bench
