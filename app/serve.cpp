// `webhooker serve`: wires storage, the dispatcher and the HTTP server, and
// turns SIGTERM/SIGINT into an orderly stop.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "app/admin_token_handover.h"
#include "app/commands.h"
#include "app/data_dir_lock.h"
#include "app/serve_options.h"
#include "base/clock.h"
#include "base/private_folder.h"
#include "base/random.h"
#include "base/thread_name.h"
#include "engine/backlog_sampler.h"
#include "engine/delivery_metrics.h"
#include "engine/engine.h"
#include "engine/operational_events.h"
#include "engine/retention_pruner.h"
#include "engine/target_health_monitor.h"
#include "net/resolver.h"
#include "net/ssrf_guard.h"
#include "server/admin_token.h"
#include "server/http_server.h"
#include "storage/commit_journal.h"
#include "storage/events_db_pool.h"
#include "storage/file_system_flush.h"
#include "storage/main_store.h"
#include "targets/http_client.h"
#include "targets/target_registry.h"

namespace webhooker::app {

namespace {

// Blocks SIGINT/SIGTERM in this thread and every thread started after it,
// so only the watcher below receives them.
sigset_t blockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Every open connection is a descriptor, and the default soft limit (1,024)
// is far below --max-connections: raise it to the hard limit.
void raiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
    spdlog::warn("daemon.rlimit_failed resource=nofile");
}

// The memory this process may use: its cgroup's limit (v2), else the RAM.
uint64_t nodeMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long pageSize = sysconf(_SC_PAGESIZE);
  uint64_t bytes = pages > 0 && pageSize > 0 ? uint64_t(pages) * uint64_t(pageSize) : 0;
  std::ifstream limit("/sys/fs/cgroup/memory.max");
  uint64_t cgroup = 0;
  if (limit >> cgroup && cgroup > 0) bytes = bytes == 0 ? cgroup : std::min(bytes, cgroup);
  return bytes;
}

// The events DB pool's size: --max-open-events-dbs, or (0) sized from the
// descriptors (after raiseDescriptorLimit) and memory this node allows.
EventsDbPool::Size eventsDbPoolSize(const ServeOptions& options) {
  if (options.maxOpenEventsDbs > 0) return {options.maxOpenEventsDbs, std::nullopt};
  rlimit limit{};
  const uint64_t descriptors =
      getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
          ? uint64_t(limit.rlim_cur)
          : uint64_t{1} << 20;
  const size_t holdable = EventsDbPool::holdableFor(
      descriptors, options.server.maxConnections, nodeMemoryBytes());
  return {EventsDbPool::kDefaultCapacity, holdable};
}

// glibc gives a thread heap's free top back to the kernel (madvise, and a
// TLB flush on every core) once it exceeds the trim threshold, 128 KiB at
// first. SQLite frees each write's savepoint journal at its release, so
// under ingest load nearly every write paid that. Freed memory now stays
// with its heap up to 4 MiB; larger blocks are still mmapped and unmapped
// as before.
void keepFreedMemory() {
  constexpr int kTrimThreshold = 4 * 1024 * 1024;
  if (mallopt(M_TRIM_THRESHOLD, kTrimThreshold) != 1) spdlog::warn("daemon.mallopt_failed");
}

// A data folder holds one node's webhooks: the first --node-id it is served
// with is kept, and another is refused, so two nodes' folders swapped by
// mistake cannot answer for each other's webhooks.
Result<void> claimNodeId(MainStore& store, const std::string& nodeId) {
  if (nodeId.empty()) return {};
  auto kept = store.getSetting("node_id");
  if (!kept) return kept.error();
  if (!kept->has_value()) return store.setSetting("node_id", nodeId);
  if (**kept != nodeId)
    return makeError(error_code::kInvalidConfig, "this data folder belongs to node " + **kept +
                                                     ", not " + nodeId);
  return {};
}

constexpr const char* kCommitJournal = "commit-journal";

// The node's commit journal (storage/commit_journal.h), replayed into the
// events files; nullptr where commit rounds do not use it (another flush
// scope, or --sync-mode normal). A journal an earlier start left is
// replayed all the same, then removed. Where there is no room to make one,
// each file flushes its own, as with --flush-scope file.
Result<std::unique_ptr<storage::CommitJournal>> openCommitJournal(
    const std::filesystem::path& dataDir, const DbOptions& db) {
  const std::filesystem::path path = dataDir / kCommitJournal;
  const bool used = db.sync == SyncMode::kFull && db.flushScope == FlushScope::kJournal;
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (!used && !exists) return std::unique_ptr<storage::CommitJournal>();
  auto journal = storage::CommitJournal::open(
      path, storage::CommitJournal::kDefaultBytes,
      [&](const std::string& file, const std::vector<storage::CommitJournal::Record>& records) {
        return EventsDb::applyJournal(dataDir / file, db, records);
      });
  if (!journal && !exists && journal.error().code == error_code::kStorageUnavailable) {
    spdlog::warn("daemon.commit_journal_unavailable path={} error=\"{}\" flush_scope=file",
                 path.string(), journal.error().message);
    return std::unique_ptr<storage::CommitJournal>();
  }
  if (!journal || used) return journal;
  if (auto closed = journal.value()->close(); !closed) return closed.error();
  if (!std::filesystem::remove(path, ec) && ec)
    return makeError(error_code::kStorageError,
                     "cannot remove " + path.string() + ": " + ec.message());
  return std::unique_ptr<storage::CommitJournal>();
}

// Commit rounds use the journal while this lives. Declared before the
// events DB pool, it closes the journal once the pool has closed the files.
class JournalInUse {
 public:
  explicit JournalInUse(storage::CommitJournal* journal) : journal_(journal) {
    if (journal_) storage::useCommitJournal(journal_);
  }
  ~JournalInUse() {
    if (!journal_) return;
    storage::useCommitJournal(nullptr);
    if (auto closed = journal_->close(); !closed)
      spdlog::warn("daemon.commit_journal_not_closed error=\"{}\"", closed.error().message);
  }
  JournalInUse(const JournalInUse&) = delete;
  JournalInUse& operator=(const JournalInUse&) = delete;

 private:
  storage::CommitJournal* const journal_;
};

}  // namespace

int runServe(const Config& config) {
  const sigset_t stopSignals = blockStopSignals();
  // Settings first, so an invalid one changes nothing on disk; exit 2 as for
  // any invalid setting, which a service does not restart on.
  auto built = serveOptionsOf(config);
  if (!built) {
    spdlog::critical("daemon.invalid_config {}", built.error().message);
    return 2;
  }
  const ServeOptions& options = built.value();
  const std::filesystem::path& dataDir = options.dataDir;
  if (auto folder = ensurePrivateFolder(dataDir); !folder) {
    spdlog::critical("daemon.data_dir_failed path={} error=\"{}\"", dataDir.string(),
                     folder.error().message);
    return 1;
  }
  // Held until the process ends.
  auto dataDirLock = DataDirLock::acquire(dataDir);
  if (!dataDirLock) {
    spdlog::critical("daemon.data_dir_lock_failed reason={} path={} error=\"{}\"",
                     dataDirLock.error().code, dataDir.string(), dataDirLock.error().message);
    return 1;
  }

  // Before anything opens an events file: what a power loss took from the
  // files comes back from the journal first.
  auto journal = openCommitJournal(dataDir, options.db);
  if (!journal) {
    spdlog::critical("daemon.commit_journal_failed path={} error=\"{}\"",
                     (dataDir / kCommitJournal).string(), journal.error().message);
    return 1;
  }
  const JournalInUse journalInUse(journal.value().get());
  if (options.db.sync == SyncMode::kFull && options.db.flushScope == FlushScope::kFileSystem) {
    if (auto used = storage::useFileSystemFlush(dataDir); !used) {
      spdlog::critical("daemon.data_dir_failed path={} error=\"{}\"", dataDir.string(),
                       used.error().message);
      return 1;
    }
  }

  SystemClock clock;
  auto store = MainStore::open(dataDir / "webhooker.db", options.db, clock);
  if (!store) {
    spdlog::critical("daemon.open_failed path={} error=\"{}\"", (dataDir / "webhooker.db").string(),
                     store.error().message);
    return 1;
  }
  if (auto node = claimNodeId(*store.value(), options.nodeId); !node) {
    spdlog::critical("daemon.invalid_config option=node-id environment=WEBHOOKER_NODE_ID "
                     "error=\"{}\"", node.error().message);
    return 2;
  }
  auto token = server::ensureAdminToken(*store.value(), options.adminToken);
  if (!token) {
    spdlog::critical("daemon.admin_token_failed error=\"{}\"", token.error().message);
    return 1;
  }

  raiseDescriptorLimit();
  keepFreedMemory();
  SystemResolver resolver;
  SsrfGuard guard(resolver, options.allowNetworks);
  if (options.egressProxy)
    spdlog::info("daemon.egress_proxy proxy={}", options.egressProxy->display());
  HttpClient httpClient(guard, clock, options.egressProxy);
  CircuitBreakers breakers(clock, options.breakerThreshold, options.breakerCooldown);
  SystemRandom random;
  const TargetRegistry targets = standardTargets(httpClient, breakers, random, clock);
  prometheus::Registry registry;
  DeliveryMetrics metrics(registry);
  // Serialised so that two state changes on different threads cannot
  // publish their recounts in the wrong order.
  std::mutex breakerGaugeMutex;
  breakers.onStateChange([&](int) {
    std::lock_guard lock(breakerGaugeMutex);
    metrics.setBreakersOpen(breakers.openCountByType());
  });

  auto jq = JqSandbox::start(options.jq);
  if (!jq) {
    spdlog::critical("daemon.jq_failed error=\"{}\"", jq.error().message);
    return 1;
  }
  RoutingEvaluator routing(*jq.value());
  RoutingMetrics routingMetrics(registry);

  EventsDbPool eventsDbs(dataDir, options.db, clock, eventsDbPoolSize(options));
  spdlog::info("daemon.events_db_pool open_at_most={}", eventsDbs.capacity());
  Engine engine(options.engine, *store.value(), eventsDbs, targets, clock, metrics,
                {&routing, &routingMetrics});
  OperationalEvents operationalEvents(*store.value(), eventsDbs, engine, clock);
  operationalEvents.reload();
  TargetHealthMonitor health(*store.value(), engine, operationalEvents, clock);
  // Breakers as they were before the restart, before any attempt can ask.
  health.attach(breakers);
  engine.setHealthReporter(health);

  BacklogSampler sampler(*store.value(), eventsDbs, metrics, clock,
                         options.samplerInterval);
  server::HttpServer http(options.server, {*store.value(), eventsDbs, engine, guard, breakers, registry,
                                    &routing, &routingMetrics, &operationalEvents, &metrics,
                                    &sampler});
  RetentionPruner pruner(*store.value(), eventsDbs,
                         options.pruneInterval);
  auto port = http.bind();
  if (!port) {
    spdlog::critical("daemon.listen_failed reason={} error=\"{}\"", port.error().code,
                     port.error().message);
    return 1;
  }

  const std::string& listen = options.server.listenAddress;
  const std::string host = listen.find(':') != std::string::npos ? "[" + listen + "]" : listen;
  if (token->generated) handOverAdminToken(*token->generated, dataDir);
  std::cout << "webhooker listening on http://" << host << ":" << port.value()
            << "  (data: " << dataDir.string() << ")" << std::endl;
  spdlog::info("daemon.started listen={}:{} data_dir={} flush_scope={}", listen, port.value(),
               dataDir.string(), config.flushScope);

  operationalEvents.start();
  // The sampler's first pass then reads only the files recovery did not.
  engine.setRecoveredBacklog([&sampler](const std::string& webhookId, uint64_t closings,
                                        std::vector<EventsDb::BacklogCount> backlog) {
    sampler.seed(webhookId, closings, std::move(backlog));
  });
  engine.start();
  // Auto-resume probes are due every probe_interval (1 s at the least).
  health.start(std::chrono::seconds(1));
  sampler.start();
  pruner.start();
  const std::chrono::milliseconds grace = options.shutdownGrace;
  std::optional<bool> drained;  // the engine's stop; set by the watcher or below
  std::jthread signalWatcher([&](std::stop_token stop) {
    nameThisThread("wh-signals");
    const timespec tick{0, 200'000'000};
    while (!stop.stop_requested()) {
      const int sig = sigtimedwait(&stopSignals, nullptr, &tick);
      if (sig == SIGINT || sig == SIGTERM) {
        spdlog::info("daemon.stopping signal={}", sig == SIGINT ? "SIGINT" : "SIGTERM");
        // Intake answers 503 while the attempts in flight finish; the
        // server keeps answering (the API, /readyz with 503) until then.
        http.stopAccepting();
        drained = engine.stop(grace);
        http.stop();
        return;
      }
    }
  });
  http.run();
  signalWatcher.request_stop();
  signalWatcher.join();
  sampler.stop();
  pruner.stop();
  health.stop();
  operationalEvents.stop();
  if (!drained) drained = engine.stop(grace);
  if (!*drained) {
    // Unfinished attempts are still `pending`/`retrying` on disk and are
    // recovered at the next start; waiting longer would only delay that.
    spdlog::warn("daemon.grace_expired grace_ms={}", grace.count());
    spdlog::shutdown();
    std::_Exit(0);
  }
  // The events DBs' WALs are emptied as their pool goes; the main DB's here,
  // once nothing writes to it.
  if (auto emptied = store.value()->checkpointWal(); !emptied || !*emptied)
    spdlog::warn("daemon.main_wal_kept error=\"{}\"",
                 emptied ? "another connection reads it" : emptied.error().message);
  const auto commits = EventsDbPool::commitCounts();
  const auto poolUse = eventsDbs.use();
  const storage::CommitJournal::Counts journaled =
      journal.value() ? journal.value()->counts() : storage::CommitJournal::Counts{};
  spdlog::info(
      "daemon.stopped commit_rounds={} wal_flushes={} file_system_flushes={} journal_writes={} "
      "journal_file_flushes={} journal_folder_flushes={} pool_gets={} pool_opens={}",
      commits.rounds, commits.walFlushes, commits.fileSystemFlushes, commits.journalWrites,
      journaled.fileFlushes, journaled.folderFlushes, poolUse.gets, poolUse.opens);
  return 0;
}

}  // namespace webhooker::app
