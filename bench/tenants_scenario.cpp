// tenants: many webhooks on one node, each its own events DB. The daemon
// first gets the ingest load (64 connections, no targets) to one webhook;
// a second daemon then creates `tenants` webhooks through the admin API,
// 8 requests in flight, gives each its first event (which makes its events
// file) and gets the same load spread at random over all of them, so that
// the load is the steady ingest of webhooks that have events. Figures: the
// many-webhook ingest rate against the one-webhook rate; the rate of the
// first events;
// the daemon's threads and peak RSS after each run; how long creating the
// webhooks took; and, from the daemon's own counts at its stop, the commit
// rounds and WAL flushes per acknowledged event (a round's flushes are
// issued together: the disk sees about one flush per round), and how often
// the pool of open events DBs already held the file asked for; and what an
// acknowledged event cost the disk: the bytes the daemon wrote (WAL and
// checkpoints) and the disk's write requests and flushes. The
// daemon's CPU per acknowledged event, many webhooks against one, is read
// beside the rate: on a shared machine it is the steadier of the two. Above
// 1,000 webhooks a third daemon does it all again with the load spread by
// Zipf's law (a few busy webhooks, a long quiet tail), as real tenants are.
#include <httplib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/load_generator.h"
#include "bench/process_cpu.h"
#include "bench/scenario_support.h"
#include "bench/scenarios.h"
#include "tests/support/temp_dir.h"

namespace webhooker::bench {

namespace {

constexpr int kCreatorsInFlight = 8;

// A line of /proc/<pid>/<file>, as a number: status's "Threads:", io's
// "write_bytes:" (what the process sent, or left dirty for the kernel to
// send, to the disk).
double procValue(pid_t pid, const std::string& file, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size()));
  return 0;
}

// Fields of /sys/block/<disk>/stat for the disk holding a folder: counts
// since boot of every process's requests.
enum class DiskCount {
  kWrites = 4,    // write requests completed (after the block layer merged them)
  kFlushes = 15,  // flush requests completed (kernels 5.5 and later): what
                  // the file system made of the fdatasync calls
};

// The disk's count since boot; nullopt when unknown.
std::optional<double> diskCount(const std::filesystem::path& dir, DiskCount count) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return std::nullopt;
  std::filesystem::path block = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" +
                                std::to_string(minor(st.st_dev));
  std::error_code ec;
  // A partition's flushes are counted on its disk.
  if (std::filesystem::exists(block / "partition", ec)) block = std::filesystem::canonical(block, ec).parent_path();
  std::ifstream in(block / "stat");
  std::vector<double> fields;
  for (double v; in >> v;) fields.push_back(v);
  const auto field = static_cast<size_t>(count);
  if (fields.size() <= field) return std::nullopt;
  return fields[field];
}

// Creates `count` webhooks through the admin API, kCreatorsInFlight
// requests at a time, each creator on a keep-alive connection of its own.
std::vector<CreatedWebhook> createWebhooks(const BenchDaemon& daemon, int count) {
  std::vector<CreatedWebhook> created(static_cast<size_t>(count));
  std::atomic<int> next{0};
  std::mutex failureMutex;
  std::string failure;
  std::vector<std::jthread> creators;
  for (int c = 0; c < kCreatorsInFlight; ++c) {
    creators.emplace_back([&] {
      httplib::Client client(daemon.url());
      client.set_keep_alive(true);
      // As the load generator's: without it the body, sent after the
      // headers, waits for their delayed ACK (~40 ms a request).
      client.set_tcp_nodelay(true);
      client.set_read_timeout(30, 0);
      const httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kAdminToken}};
      for (int i = next++; i < count; i = next++) {
        const std::string body = nlohmann::json{{"name", "tenant-" + std::to_string(i)}}.dump();
        auto res = client.Post("/api/v1/webhooks", auth, body, "application/json");
        if (!res || res->status != 201) {
          std::lock_guard lock(failureMutex);
          failure = res ? res->body : "no answer";
          return;
        }
        const auto webhook = nlohmann::json::parse(res->body);
        created[static_cast<size_t>(i)] = {
            webhook.at("id").get<std::string>(),
            webhook.at("entrypoints").at(0).at("url").get<std::string>()};
      }
    });
  }
  creators.clear();  // joins
  if (!failure.empty()) throw std::runtime_error("creating a webhook failed: " + failure);
  return created;
}

// Sends one event to each of `spec`'s paths (or its one path): a webhook's
// first event makes its events file, which costs the file system an inode
// for each of the file, its WAL and its -shm. Sent before the measured load.
LoadResult sendFirstEvents(LoadSpec spec, const std::vector<std::string>& bodies) {
  spec.spread = PathSpread::kInOrder;
  spec.requests = spec.paths.empty() ? 1 : spec.paths.size();
  spec.firstSeq = reserveSeqs(spec.requests);
  return runLoad(spec, bodies);
}

struct DaemonAfterLoad {
  LoadResult load;
  double threads = 0;
  double peakRssMb = 0;
  double commitRounds = 0;
  double walFlushes = 0;
  double fileSystemFlushes = 0;
  double journalWrites = 0;
  double journalFileFlushes = 0;  // files flushed so that the journal's ring is reused
  double journalFolderFlushes = 0;  // ... and flushes of the data folder's file system for it
  double cpuSeconds = 0;  // the daemon's, during the load
  double writtenBytes = 0;  // the daemon's, during the load
  // The pool's lookups of an events DB and those that opened its file.
  std::optional<double> poolGets;
  std::optional<double> poolOpens;
  std::optional<double> diskFlushes;  // during the load, the whole machine's
  std::optional<double> diskWrites;   // the same
};

// Posts `spec` through `daemon` (already holding the webhooks), then reads
// its threads and peak RSS, stops it and reads its commit counts.
DaemonAfterLoad loadAndStop(BenchDaemon& daemon, const LoadSpec& spec,
                            const std::vector<std::string>& bodies,
                            const std::filesystem::path& dataDir) {
  DaemonAfterLoad out;
  const auto flushesBefore = diskCount(dataDir, DiskCount::kFlushes);
  const auto writesBefore = diskCount(dataDir, DiskCount::kWrites);
  const double cpuBefore = processTreeCpuSeconds(daemon.pid());
  const double writtenBefore = procValue(daemon.pid(), "io", "write_bytes:");
  out.load = runLoad(spec, bodies);
  out.cpuSeconds = processTreeCpuSeconds(daemon.pid()) - cpuBefore;
  out.writtenBytes = procValue(daemon.pid(), "io", "write_bytes:") - writtenBefore;
  const auto flushesAfter = diskCount(dataDir, DiskCount::kFlushes);
  const auto writesAfter = diskCount(dataDir, DiskCount::kWrites);
  if (flushesBefore && flushesAfter) out.diskFlushes = *flushesAfter - *flushesBefore;
  if (writesBefore && writesAfter) out.diskWrites = *writesAfter - *writesBefore;
  out.threads = procValue(daemon.pid(), "status", "Threads:");
  out.peakRssMb = daemon.peakRssMb();
  daemon.stop();
  out.commitRounds = daemon.logValue("daemon.stopped", "commit_rounds").value_or(0);
  out.walFlushes = daemon.logValue("daemon.stopped", "wal_flushes").value_or(0);
  out.fileSystemFlushes = daemon.logValue("daemon.stopped", "file_system_flushes").value_or(0);
  out.journalWrites = daemon.logValue("daemon.stopped", "journal_writes").value_or(0);
  out.journalFileFlushes = daemon.logValue("daemon.stopped", "journal_file_flushes").value_or(0);
  out.journalFolderFlushes =
      daemon.logValue("daemon.stopped", "journal_folder_flushes").value_or(0);
  out.poolGets = daemon.logValue("daemon.stopped", "pool_gets");
  out.poolOpens = daemon.logValue("daemon.stopped", "pool_opens");
  return out;
}

// A daemon given `tenants` webhooks through the admin API, each its first
// event, then `spec`'s load spread over them by `spread`; stopped.
struct ManyWebhooks {
  testing::TempDir data;
  LoadSpec spec;
  std::vector<CreatedWebhook> webhooks;
  double creationSeconds = 0;
  std::optional<double> creationFlushes;  // the whole disk's
  LoadResult firstEvents;
  DaemonAfterLoad many;
};

std::unique_ptr<ManyWebhooks> runMany(const BenchConfig& config, LoadSpec spec, PathSpread spread) {
  auto run = std::make_unique<ManyWebhooks>();
  BenchDaemon daemon(run->data.path(), config.daemonSettings());
  const auto flushesBefore = diskCount(run->data.path(), DiskCount::kFlushes);
  const auto creationStart = std::chrono::steady_clock::now();
  run->webhooks = createWebhooks(daemon, config.tenants);
  run->creationSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - creationStart).count();
  const auto flushesAfter = diskCount(run->data.path(), DiskCount::kFlushes);
  if (flushesBefore && flushesAfter) run->creationFlushes = *flushesAfter - *flushesBefore;
  spec.baseUrl = daemon.url();
  spec.paths.clear();
  for (const CreatedWebhook& w : run->webhooks) spec.paths.push_back(w.hookPath);
  run->firstEvents = sendFirstEvents(spec, config.bodies);
  spec.spread = spread;
  spec.firstSeq = reserveSeqs(spec.requests);
  run->many = loadAndStop(daemon, spec, config.bodies, run->data.path());
  run->spec = std::move(spec);
  return run;
}

// Every event of `run` that was acknowledged is in its webhook's file.
void checkStored(Report& report, const BenchConfig& config, const ManyWebhooks& run) {
  std::map<size_t, std::vector<int64_t>> seqsOf;
  for (size_t i = 0; i < run.firstEvents.requests.size(); ++i) {
    const RequestOutcome& r = run.firstEvents.requests[i];
    if (r.status / 100 == 2) seqsOf[i].push_back(r.seq);
  }
  for (size_t i = 0; i < run.many.load.requests.size(); ++i) {
    const RequestOutcome& r = run.many.load.requests[i];
    if (r.status / 100 == 2) seqsOf[pathIndexOf(run.spec, i)].push_back(r.seq);
  }
  CorrectnessSpec check{run.data.path(), {}, {}, {}, {}};
  for (auto& entry : seqsOf)
    check.webhooks.push_back({run.webhooks[entry.first].id, {}, std::move(entry.second)});
  addCheckAfterWait(report, "tenants", config, true, check);
}

double microsPerEvent(const DaemonAfterLoad& run) {
  return microsPer(run.cpuSeconds, run.load.ok());
}

// Lookups the pool answered with a file it held open (a miss reopens it).
void addPoolHits(Report& report, const std::string& label, const DaemonAfterLoad& run) {
  if (run.poolGets && run.poolOpens && *run.poolGets > 0)
    report.add({"tenants", "pool hits per lookup (first events included)" + label,
                1 - *run.poolOpens / *run.poolGets, "1", 0, "-", std::nullopt});
}

}  // namespace

void runTenants(const BenchConfig& config, Report& report) {
  const int tenants = config.tenants;
  LoadSpec spec;
  spec.connections = config.ingestAloneConnections;
  spec.requests = config.tenantEvents;

  DaemonAfterLoad one;
  {
    testing::TempDir data;
    BenchDaemon daemon(data.path(), config.daemonSettings());
    const CreatedWebhook webhook = daemon.createWebhook("one");
    LoadSpec oneSpec = spec;
    oneSpec.baseUrl = daemon.url();
    oneSpec.path = webhook.hookPath;
    sendFirstEvents(oneSpec, config.bodies);
    oneSpec.firstSeq = reserveSeqs(oneSpec.requests);
    one = loadAndStop(daemon, oneSpec, config.bodies, data.path());
  }

  const std::unique_ptr<ManyWebhooks> uniform = runMany(config, spec, PathSpread::kUniform);
  const DaemonAfterLoad& many = uniform->many;
  const std::string at = " at " + std::to_string(tenants) + " webhooks";
  report.add({"tenants", "events/s acknowledged" + at, many.load.steadyRatePerSecond(), "1/s",
              one.load.steadyRatePerSecond(), "the same load to one webhook",
              Goal{Goal::Kind::kRatioAtLeast, 0.8}});
  report.add({"tenants", "first event to each webhook (makes its file), events/s" + at,
              uniform->firstEvents.steadyRatePerSecond(), "1/s", one.load.steadyRatePerSecond(),
              "the load to one webhook", std::nullopt});
  // The 0.8 above; CPU is what a shared machine measures steadily.
  report.add({"tenants", "daemon CPU per acknowledged event" + at, microsPerEvent(many), "us",
              microsPerEvent(one), "one webhook", Goal{Goal::Kind::kRatioAtMost, 3.0}});
  addPoolHits(report, at, many);
  report.add({"tenants", "daemon threads after the load" + at, many.threads, "threads",
              one.threads, "one webhook", Goal{Goal::Kind::kValueAtMost, 64}});
  report.add({"tenants", "daemon peak RSS" + at, many.peakRssMb, "MB", one.peakRssMb,
              "one webhook",
              Goal{Goal::Kind::kValueAtMost, tenants > 1'000 ? 400.0 : 150.0}});
  // 10,000 in 20 s: 2 ms each.
  report.add({"tenants", "creating " + std::to_string(tenants) + " webhooks, 8 in flight",
              uniform->creationSeconds, "s", 0, "-",
              Goal{Goal::Kind::kValueAtMost, 20.0 * tenants / 10'000}});
  if (uniform->creationFlushes)
    report.add({"tenants", "disk flushes per webhook created (whole disk)",
                *uniform->creationFlushes / tenants, "1", 0, "-", std::nullopt});
  const auto perEvent = [](double count, const DaemonAfterLoad& run) {
    return run.load.ok() > 0 ? count / static_cast<double>(run.load.ok()) : 0;
  };
  report.add({"tenants", "commit rounds per acknowledged event" + at,
              perEvent(many.commitRounds, many), "1", perEvent(one.commitRounds, one),
              "one webhook", std::nullopt});
  report.add({"tenants", "WAL flushes per acknowledged event" + at,
              perEvent(many.walFlushes, many), "1", perEvent(one.walFlushes, one), "one webhook",
              std::nullopt});
  report.add({"tenants", "KB the daemon wrote per acknowledged event" + at,
              perEvent(many.writtenBytes / 1024, many), "KB",
              perEvent(one.writtenBytes / 1024, one), "one webhook", std::nullopt});
  if (config.flushScope == "filesystem")
    report.add({"tenants", "file-system flushes per acknowledged event" + at,
                perEvent(many.fileSystemFlushes, many), "1", perEvent(one.fileSystemFlushes, one),
                "one webhook", std::nullopt});
  if (config.flushScope == "journal") {
    report.add({"tenants", "journal writes per acknowledged event" + at,
                perEvent(many.journalWrites, many), "1", perEvent(one.journalWrites, one),
                "one webhook", std::nullopt});
    report.add({"tenants", "files flushed to reuse the journal per acknowledged event" + at,
                perEvent(many.journalFileFlushes, many), "1", perEvent(one.journalFileFlushes, one),
                "one webhook", std::nullopt});
    report.add({"tenants", "folder flushes to reuse the journal per 1,000 events" + at,
                1000 * perEvent(many.journalFolderFlushes, many), "1",
                1000 * perEvent(one.journalFolderFlushes, one), "one webhook", std::nullopt});
  }
  // The disk's own count: concurrent fdatasync calls joined into one journal
  // commit and cache flush show here as fewer flushes than calls. Counts
  // every process's flushes, so a busy machine makes it an upper bound.
  if (many.diskFlushes && one.diskFlushes)
    report.add({"tenants", "disk flushes per acknowledged event (whole disk)" + at,
                perEvent(*many.diskFlushes, many), "1", perEvent(*one.diskFlushes, one),
                "one webhook", std::nullopt});
  if (many.diskWrites && one.diskWrites)
    report.add({"tenants", "disk write requests per acknowledged event (whole disk)" + at,
                perEvent(*many.diskWrites, many), "1", perEvent(*one.diskWrites, one),
                "one webhook", std::nullopt});
  checkStored(report, config, *uniform);
  if (tenants <= 1'000) return;

  // Real tenants are not uniform: a few busy webhooks and a long quiet tail.
  const std::unique_ptr<ManyWebhooks> zipf = runMany(config, spec, PathSpread::kZipf);
  const std::string zipfAt = at + ", by Zipf's law";
  report.add({"tenants", "events/s acknowledged" + zipfAt, zipf->many.load.steadyRatePerSecond(),
              "1/s", one.load.steadyRatePerSecond(), "the same load to one webhook", std::nullopt});
  report.add({"tenants", "daemon CPU per acknowledged event" + zipfAt, microsPerEvent(zipf->many),
              "us", microsPerEvent(one), "one webhook", std::nullopt});
  addPoolHits(report, zipfAt, zipf->many);
  checkStored(report, config, *zipf);
}

}  // namespace webhooker::bench
