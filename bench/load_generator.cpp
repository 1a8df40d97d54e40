#include "bench/load_generator.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

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
        const std::string& path =
            spec.paths.empty() ? spec.path
                               : spec.paths[spec.pathsInOrder ? i % spec.paths.size()
                                                              : pathIndex(i, spec.paths.size())];
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

size_t pathIndex(size_t i, size_t count) {
  uint64_t x = i + 0x9e3779b97f4a7c15ULL;  // splitmix64
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<size_t>((x ^ (x >> 31)) % count);
}

}  // namespace webhooker::bench
