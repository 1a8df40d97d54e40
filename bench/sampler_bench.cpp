// How long one pass of the backlog sampler takes over many webhooks.
//
// Builds N webhooks (events DBs), each with a few pending and retrying
// deliveries, then times sampler passes against a baseline measured in the
// same run on the same files: a pass that opens each events DB read-only,
// reads one row and closes it — the least any tool looking into every file
// must do. Medians of 5 passes.
//
//   sampler_bench [webhooks=1000] [pool capacity=256]
#include <SQLiteCpp/SQLiteCpp.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <vector>

#include "base/clock.h"
#include "engine/backlog_sampler.h"
#include "engine/delivery_metrics.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"

using namespace webhooker;

namespace {

double medianMs(const std::function<void()>& pass, int runs = 5) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    pass();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int webhooks = argc > 1 ? std::atoi(argv[1]) : 1000;
  const size_t capacity = argc > 2 ? static_cast<size_t>(std::atoi(argv[2])) : 256;
  std::random_device rd;
  const auto dir = std::filesystem::temp_directory_path() / ("webhooker-bench-" + std::to_string(rd()));
  std::filesystem::create_directories(dir);

  SystemClock clock;
  DbOptions options;
  options.sync = SyncMode::kNormal;  // setting up the files is not what is measured
  auto store = MainStore::open(dir / "webhooker.db", options, clock);
  if (!store) return std::fprintf(stderr, "%s\n", store.error().message.c_str()), 1;
  EventsDbPool pool(dir, options, clock, capacity);
  std::vector<std::string> ids;
  for (int i = 0; i < webhooks; ++i) {
    auto w = store.value()->createWebhook("bench-" + std::to_string(i), "", 30);
    TargetRecord t;
    t.webhookId = w->id;
    t.name = "t";
    t.type = i % 2 ? "http" : "log";
    t.configJson = i % 2 ? R"({"url":"https://example.com/"})" : "{}";
    auto target = store.value()->createTarget(t);
    auto db = pool.get(w->id);
    InboundEvent e;
    e.method = "POST";
    e.body = R"({"bench":true})";
    for (int k = 0; k < 5; ++k) (void)db.value()->ingest(e, {target->id}, std::chrono::hours(24));
    ids.push_back(w->id);
  }

  prometheus::Registry registry;
  DeliveryMetrics metrics(registry);
  BacklogSampler sampler(*store.value(), pool, metrics);

  const double baseline = medianMs([&] {
    for (const auto& id : ids) {
      SQLite::Database db(pool.pathFor(id).string(), SQLite::OPEN_READONLY);
      (void)db.execAndGet("SELECT COUNT(*) FROM (SELECT 1 FROM deliveries LIMIT 1)").getInt();
    }
  });
  const double sampling = medianMs([&] {
    if (auto r = sampler.sampleOnce(); !r) std::fprintf(stderr, "%s\n", r.error().message.c_str());
  });
  std::printf("sampler pass over %d webhooks (pool %zu): median %.1f ms\n", webhooks, capacity, sampling);
  std::printf("baseline (open each events DB read-only, read one row): median %.1f ms\n", baseline);
  std::printf("ratio sampler/baseline: %.2f\n", sampling / std::max(baseline, 0.001));
  std::filesystem::remove_all(dir);
  return 0;
}
