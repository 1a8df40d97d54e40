#include "bench/load_generator.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "targets/webhook_signature.h"

namespace webhooker::bench {

size_t LoadResult::ok() const {
  return static_cast<size_t>(std::count_if(requests.begin(), requests.end(), [](const auto& r) {
    return r.status >= 200 && r.status < 300;
  }));
}

std::vector<int64_t> LoadResult::acceptedSeqs() const {
  std::vector<int64_t> out;
  for (const RequestOutcome& r : requests)
    if (r.status == 200) out.push_back(r.seq);
  return out;
}

double LoadResult::steadyRatePerSecond() const {
  std::vector<SteadyTime> answered;
  for (const RequestOutcome& r : requests)
    if (r.status >= 200 && r.status < 300)
      answered.push_back(r.due + std::chrono::duration_cast<SteadyTime::duration>(
                                     std::chrono::duration<double, std::milli>(r.latencyMs)));
  if (answered.size() < 10) return ratePerSecond();
  std::sort(answered.begin(), answered.end());
  const size_t from = answered.size() / 10;
  const size_t to = answered.size() - 1 - answered.size() / 10;
  const double window = std::chrono::duration<double>(answered[to] - answered[from]).count();
  return window > 0 ? static_cast<double>(to - from) / window : 0;
}

double LoadResult::latencyPercentile(double p) const {
  std::vector<double> values;
  for (const RequestOutcome& r : requests)
    if (r.status >= 200 && r.status < 300) values.push_back(r.latencyMs);
  return percentile(std::move(values), p);
}

int64_t reserveSeqs(size_t n) {
  static std::atomic<int64_t> next{1};
  return next.fetch_add(static_cast<int64_t>(n));
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

LoadResult runLoad(const LoadSpec& spec, const std::vector<std::string>& bodies) {
  LoadResult result;
  result.requests.resize(spec.requests);
  std::atomic<size_t> next{0};
  const auto start = std::chrono::steady_clock::now();
  const auto dueAt = [&](size_t i) {
    return start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(static_cast<double>(i) / spec.rate));
  };
  std::vector<std::jthread> connections;
  for (int c = 0; c < spec.connections; ++c) {
    connections.emplace_back([&] {
      httplib::Client client(spec.baseUrl);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      client.set_read_timeout(spec.readTimeout);
      client.set_connection_timeout(spec.readTimeout);
      for (size_t i = next++; i < spec.requests; i = next++) {
        RequestOutcome& r = result.requests[i];
        r.seq = spec.firstSeq + static_cast<int64_t>(i);
        if (spec.rate > 0) {
          r.due = dueAt(i);
          std::this_thread::sleep_until(r.due);
          // Hopelessly late (a stalled server): failed without being sent, so
          // a stall cannot stretch the run far past its planned length.
          if (std::chrono::steady_clock::now() > r.due + spec.readTimeout) continue;
        } else {
          r.due = std::chrono::steady_clock::now();
        }
        httplib::Headers headers = {{kSeqHeader, std::to_string(r.seq)}};
        const std::string& path = spec.paths.empty() ? spec.path : spec.paths[pathIndexOf(spec, i)];
        const std::string& body = bodies[i % bodies.size()];
        if (!spec.signingSecret.empty()) {
          const std::string id = "msg_" + std::to_string(r.seq);
          const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
          headers.emplace("webhook-id", id);
          headers.emplace("webhook-timestamp", std::to_string(now));
          headers.emplace("webhook-signature",
                          standardWebhookSignatureHeader({spec.signingSecret}, id, now, body));
        }
        auto res = client.Post(path, headers, body, "application/json");
        r.latencyMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r.due)
                          .count();
        r.status = res ? res->status : 0;
      }
    });
  }
  connections.clear();  // joins
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

namespace {

uint64_t splitmix64(size_t i) {
  uint64_t x = i + 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Zipf's law (s = 1) over `count` paths: path k's share is 1/(k+1) of the
// first's. Inverted through the cumulative shares, computed once per count.
size_t zipfIndex(size_t i, size_t count) {
  static std::mutex mutex;
  static std::map<size_t, std::vector<double>> cumulativeByCount;
  const std::vector<double>* cumulative;
  {
    std::lock_guard lock(mutex);
    std::vector<double>& shares = cumulativeByCount[count];
    if (shares.empty()) {
      double sum = 0;
      for (size_t k = 0; k < count; ++k) shares.push_back(sum += 1.0 / static_cast<double>(k + 1));
    }
    cumulative = &shares;  // never changed again
  }
  const double u = static_cast<double>(splitmix64(i) >> 11) / static_cast<double>(1ULL << 53);
  const auto it = std::upper_bound(cumulative->begin(), cumulative->end(), u * cumulative->back());
  return std::min(static_cast<size_t>(it - cumulative->begin()), count - 1);
}

}  // namespace

size_t pathIndexOf(const LoadSpec& spec, size_t i) {
  const size_t count = spec.paths.size();
  switch (spec.spread) {
    case PathSpread::kInOrder:
      return i % count;
    case PathSpread::kZipf:
      return zipfIndex(i, count);
    case PathSpread::kUniform:
      break;
  }
  return static_cast<size_t>(splitmix64(i) % count);
}

}  // namespace webhooker::bench
