#include "bench/receiver.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "tests/support/loopback_listen.h"

namespace webhooker::bench {

uint64_t bodyHash(std::string_view body) {
  uint64_t hash = 14695981039346656037ULL;
  for (const unsigned char c : body) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

BenchReceiver::BenchReceiver(int threads, std::chrono::milliseconds delay) : delay_(delay) {
  server_.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  server_.set_tcp_nodelay(true);
  server_.set_keep_alive_max_count(1'000'000);
  server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
    const auto now = std::chrono::steady_clock::now();
    Arrival a{-1, now, bodyHash(req.body)};
    if (req.has_header(kSeqHeader)) a.seq = std::stoll(req.get_header_value(kSeqHeader));
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    bool awaitedReached = false;
    {
      std::lock_guard lock(arrivalsMutex_);
      arrivals_.push_back(a);
      awaitedReached = ++count_ >= awaited_;
      if (awaitedReached) awaited_ = kNoneAwaited;
    }
    // Only then: a wake-up per arrival would cost the machine a thread
    // switch per delivery that the bare loop (no waiter) does not pay.
    if (awaitedReached) arrived_.notify_all();
    res.set_content("ok", "text/plain");
  });
  port_ = testing::bindLoopbackWithFullBacklog(server_);
  if (port_ <= 0) throw std::runtime_error("receiver: cannot listen on 127.0.0.1");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
}

BenchReceiver::~BenchReceiver() {
  server_.stop();
  thread_.join();
}

std::string BenchReceiver::url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }

bool BenchReceiver::waitForCount(size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(arrivalsMutex_);
  return arrived_.wait_for(lock, timeout, [&] {
    if (count_.load() >= n) return true;
    awaited_ = std::min(awaited_, n);
    return false;
  });
}

std::vector<Arrival> BenchReceiver::arrivals() const {
  std::lock_guard lock(arrivalsMutex_);
  return arrivals_;
}

double BenchReceiver::arrivalRate(std::optional<SteadyTime> end) const {
  std::lock_guard lock(arrivalsMutex_);
  if (arrivals_.size() < 2) return 0;
  const auto [first, last] = std::minmax_element(
      arrivals_.begin(), arrivals_.end(), [](const Arrival& a, const Arrival& b) { return a.at < b.at; });
  const double seconds = std::chrono::duration<double>(end.value_or(last->at) - first->at).count();
  return seconds > 0 ? static_cast<double>(arrivals_.size() - 1) / seconds : 0;
}

std::chrono::duration<double, std::milli> BenchReceiver::longestPause() const {
  std::vector<SteadyTime> times;
  {
    std::lock_guard lock(arrivalsMutex_);
    times.reserve(arrivals_.size());
    for (const Arrival& a : arrivals_) times.push_back(a.at);
  }
  std::sort(times.begin(), times.end());
  std::chrono::duration<double, std::milli> longest{0};
  for (size_t i = 1; i < times.size(); ++i)
    longest = std::max<std::chrono::duration<double, std::milli>>(longest, times[i] - times[i - 1]);
  return longest;
}

}  // namespace webhooker::bench
