// scale: many webhooks with a retrying backlog (seeded, due in an hour, and
// synced to disk), one run per shape of BenchConfig::scaleShapes (--large:
// 10,000 webhooks, and 1,000,000 retrying; --moonshot: 100,000 webhooks with
// 1,000,000 retrying, each file a copy of the first with its own ids).
//  - recovery: from starting the daemon to its `recovery.done` log line,
//    against a bare scan that opens every events DB and reads its unfinished
//    deliveries;
//  - a sampler pass (BacklogSampler, in process): the first, which reads
//    every file, and the median of the 3 after it, which reuse the counts
//    of files nobody opened since; against opening every events DB
//    read-only and reading one row;
//  - the daemon's own first sampler pass, right after recovery, which reads
//    only the files recovery could not hand it (its log line);
//  - the daemon's peak RSS after recovery, against an idle daemon's.
#include <unistd.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>

#include "base/clock.h"
#include "bench/blackhole.h"
#include "bench/correctness.h"
#include "bench/daemon.h"
#include "bench/load_generator.h"
#include "bench/scenarios.h"
#include "bench/scenario_support.h"
#include "engine/backlog_sampler.h"
#include "engine/delivery_metrics.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "tests/support/temp_dir.h"

namespace webhooker::bench {

namespace {

double millisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double medianMs(const std::function<void()>& pass, int runs) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    pass();
    times.push_back(millisSince(start));
  }
  return percentile(std::move(times), 50);
}

void eachEventsDb(const std::vector<WebhookExpectation>& webhooks, const std::filesystem::path& dir,
                  const char* query) {
  for (const WebhookExpectation& w : webhooks) {
    SQLite::Database db((dir / ("events-" + w.id + ".db")).string(), SQLite::OPEN_READONLY);
    SQLite::Statement rows(db, query);
    while (rows.executeStep()) {
    }
  }
}

double sampledHttpRetrying(prometheus::Registry& registry) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != "webhooker_deliveries_retrying") continue;
    for (const prometheus::ClientMetric& m : family.metric)
      for (const prometheus::ClientMetric::Label& l : m.label)
        if (l.name == "target_type" && l.value == "http") return m.gauge.value;
  }
  return -1;
}

void runScaleShape(const BenchConfig& config, const BenchConfig::ScaleShape& shape,
                   Report& report) {
  const auto n = static_cast<size_t>(shape.webhooks);
  const size_t perWebhook = shape.retrying / n;
  testing::TempDir data;
  Blackhole target;
  std::vector<WebhookExpectation> webhooks;
  const auto seeding = std::chrono::steady_clock::now();
  {
    Seeder seeder(data.path());
    const TimePoint retryAt = std::chrono::system_clock::now() + std::chrono::hours(1);
    const std::vector<SeedTarget> targets = {{target.url(), 4}};
    std::optional<SeededWebhook> first;
    for (size_t i = 0; i < n; ++i) {
      const std::string name = "scale-" + std::to_string(i);
      if (!first || !shape.copyTemplate) {
        webhooks.push_back(seedWebhook(seeder, name, targets, perWebhook, config.smallBodies, retryAt));
        first = SeededWebhook{webhooks.back().id, "", webhooks.back().targetIds};
        continue;
      }
      const int64_t firstSeq = reserveSeqs(perWebhook);
      const SeededWebhook copy = seeder.copyWebhook(name, targets, *first, firstSeq);
      WebhookExpectation& w = webhooks.emplace_back(WebhookExpectation{copy.id, copy.targetIds, {}});
      for (size_t k = 0; k < perWebhook; ++k) w.acceptedSeqs.push_back(firstSeq + static_cast<int64_t>(k));
    }
  }

  // On disk, as a restart finds them: blocks written only to the page cache
  // have none allocated yet, so freeing them (each open truncates its WAL
  // index) costs nothing, where on disk it can cost a discard.
  ::sync();
  std::cerr << " (seeded " << n << " webhooks in " << millisSince(seeding) / 1000 << " s)" << std::flush;
  const double idleRss = idleDaemonPeakRssMb();

  const double bareScanMs = medianMs(
      [&] {
        eachEventsDb(webhooks, data.path(),
                     "SELECT id, status, attempts, next_attempt_at FROM deliveries "
                     "WHERE status IN ('pending', 'retrying')");
      },
      1);
  const auto start = std::chrono::steady_clock::now();
  double recoveryMs = 0;
  std::optional<double> daemonFirstPassMs;
  double rss = 0;
  {
    // A sweep soon after start, so that the peak RSS below has seen it.
    BenchDaemon daemon(data.path(), config.daemonSettings({"--shutdown-grace-ms", "100",
                                                           "--sweep-interval-ms", "2000"}));
    if (!daemon.waitForLog("recovery.done", std::chrono::minutes(5)))
      report.addCheck("scale", {"the daemon never logged recovery.done"});
    recoveryMs = millisSince(start);
    // The daemon's own first pass, right after recovery, as deliveries start.
    if (daemon.waitForLog("sampler.pass", std::chrono::minutes(2)))
      daemonFirstPassMs = daemon.logValue("sampler.pass", "duration_ms");
    // The start-up retention pass and the first sweep read every webhook's
    // DB too: the peak is read once both have run.
    for (const char* pass : {"retention.pass", "sweep.pass"})
      if (!daemon.waitForLog(pass, std::chrono::minutes(2)))
        report.addCheck("scale", {std::string("the daemon never logged ") + pass});
    rss = daemon.peakRssMb();
    daemon.stop();
  }

  SystemClock clock;
  DbOptions options;
  auto store = MainStore::open(data.path() / "webhooker.db", options, clock);
  if (!store) throw std::runtime_error(store.error().message);
  EventsDbPool pool(data.path(), options, clock, 256);
  prometheus::Registry registry;
  DeliveryMetrics metrics(registry);
  BacklogSampler sampler(*store.value(), pool, metrics, clock);
  // The first pass reads every file; later ones reuse the counts of files
  // nobody opened since, as a daemon's passes do after its first.
  const double firstPassMs = medianMs([&] { (void)sampler.sampleOnce(); }, 1);
  const int passes = config.smoke ? 1 : 3;
  // Opening 100,000 files three times over is minutes of baseline.
  const int baselinePasses = n > 10'000 ? 1 : passes;
  const double samplerMs = medianMs([&] { (void)sampler.sampleOnce(); }, passes);
  const double openOneRowMs = medianMs(
      [&] { eachEventsDb(webhooks, data.path(), "SELECT 1 FROM deliveries LIMIT 1"); },
      baselinePasses);

  // Every seeded delivery is still waiting for its retry, on a target its
  // webhook has: none was lost, attempted or dead-lettered (copied files
  // name their own webhook's target).
  if (const double retrying = sampledHttpRetrying(registry); retrying != static_cast<double>(shape.retrying))
    report.addCheck("scale", {"the sampler counted " + std::to_string(static_cast<int64_t>(retrying)) +
                              " http deliveries retrying, not " + std::to_string(shape.retrying)});

  const std::string what =
      std::to_string(shape.retrying) + " retrying over " + std::to_string(n) + " webhooks";
  const Goal samplerGoal{Goal::Kind::kValueAtMost, shape.samplerGoalMs};
  report.add({"scale", "recovery, " + what, recoveryMs / 1000, "s", bareScanMs / 1000,
              "bare scan of the same rows, s", Goal{Goal::Kind::kValueAtMost, shape.recoveryGoalS}});
  report.add({"scale", "sampler pass over " + std::to_string(n) + " events DBs", samplerMs, "ms",
              openOneRowMs, "open each DB, read one row", samplerGoal});
  report.add({"scale", "first sampler pass over " + std::to_string(n) + " events DBs", firstPassMs,
              "ms", openOneRowMs, "open each DB, read one row", std::nullopt});
  if (!daemonFirstPassMs) report.addCheck("scale", {"the daemon logged no sampler pass"});
  report.add({"scale", "the daemon's first sampler pass after recovering " + what,
              daemonFirstPassMs.value_or(-1), "ms", openOneRowMs, "open each DB, read one row",
              samplerGoal});
  report.add({"scale", "peak RSS after recovering " + what, rss, "MB", idleRss,
              "idle daemon peak RSS", Goal{Goal::Kind::kValueAtMost, shape.rssGoalMb}});
  report.addCheck("scale", checkCorrectness({data.path(), webhooks, {}, {}, {}}));
}

}  // namespace

void runScale(const BenchConfig& config, Report& report) {
  for (const BenchConfig::ScaleShape& shape : config.scaleShapes)
    runScaleShape(config, shape, report);
}

}  // namespace webhooker::bench
