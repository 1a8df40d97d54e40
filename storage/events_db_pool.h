// EventsDbPool: the open events databases, least recently used first out,
// so 10,000 webhooks do not hold 30,000 file descriptors (db, -wal, -shm).
//
// Ownership: the pool holds one shared_ptr per open file; a caller that got
// one keeps the file open while it uses it, even if the pool evicts it.
// Threading: any thread; the map and list are guarded by poolMutex_. Files
// are opened outside it (each takes milliseconds, and with more active
// webhooks than the pool holds every delivery may open one), so only
// callers of the same webhook wait for its open. An evicted DB is closed as
// it is, its WAL kept (as durable as the file; the next open reads it), so
// an eviction costs no disk flush; the pool's closer thread first empties a
// WAL grown past kCheckpointOnCloseBytes into its file, and, when the pool
// is destroyed, every WAL, so that a restart's recovery has none to read.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"
#include "storage/commit_threads.h"
#include "storage/db_options.h"
#include "storage/delivery_records.h"
#include "storage/events_db.h"

namespace webhooker {

class EventsDbPool {
 public:
  // Enough for 1,000 webhooks delivering at once: with fewer open files
  // than active webhooks, nearly every attempt opens and closes one
  // (measured: 1,000 webhooks x 1 target drained at 247/s with 256 open,
  // 2,364/s with all open). About 6 file descriptors each.
  static constexpr size_t kDefaultCapacity = 1024;

  // What one open events DB may hold of the node: its writer's file, WAL
  // and -shm, and a file and WAL for each of its two readers (opened on
  // need); and its memory (measured: ~180 KiB of RSS per open busy file,
  // docs/performance.md#tenants).
  static constexpr uint64_t kDescriptorsPerDb = 7;
  static constexpr uint64_t kBytesPerDb = 192 * 1024;
  // The memory the open DBs may take together: a quarter of the node's,
  // and no more than this, so that 10,000 webhooks stay within 400 MB.
  static constexpr uint64_t kMemoryBudgetBytes = 256ULL << 20;
  // Descriptors kept for everything else than events DBs (the main DB,
  // logs, jq workers, connections to targets) beside the HTTP connections.
  static constexpr uint64_t kOtherDescriptors = 1024;

  // Open events DBs the node allows: the descriptors left of
  // `descriptorLimit` once kOtherDescriptors and `httpConnections` (at most
  // half of the rest) are set aside, kDescriptorsPerDb each, and the memory
  // budget (the smaller of kMemoryBudgetBytes and a quarter of
  // `memoryBytes`), kBytesPerDb each. At least 1.
  static size_t holdableFor(uint64_t descriptorLimit, uint64_t httpConnections,
                            uint64_t memoryBytes);
  // The pool's size with `webhooks` webhooks when the node allows
  // `holdable` open: all of them when every webhook fits, else
  // kDefaultCapacity (or `holdable` if fewer). Each SQLite open walks a
  // list of every file open in the process, so a pool that holds some but
  // not all of many busy webhooks costs more CPU per event than 1,024
  // (docs/decisions.md, "The pool's size").
  static size_t capacityFor(size_t webhooks, size_t holdable);

  // `capacity` open DBs at most; or, with `holdable` (see capacityFor),
  // sized by the number of webhooks files in `dataDir`, which get(),
  // remove() and install() keep up to date.
  struct Size {
    size_t capacity = kDefaultCapacity;
    std::optional<size_t> holdable;
  };
  EventsDbPool(std::filesystem::path dataDir, DbOptions options, const Clock& clock, Size size);
  EventsDbPool(std::filesystem::path dataDir, DbOptions options, const Clock& clock,
               size_t capacity = kDefaultCapacity)
      : EventsDbPool(std::move(dataDir), options, clock, Size{capacity, std::nullopt}) {}
  // Closes every DB it holds as it closes the evicted ones (their holders
  // let go of theirs), waiting for the flushes.
  ~EventsDbPool();
  EventsDbPool(const EventsDbPool&) = delete;
  EventsDbPool& operator=(const EventsDbPool&) = delete;

  // A webhook's file is made by its first write, not when the webhook is
  // created (docs/decisions.md, "A webhook's events file is made by its
  // first write"): until then the webhook has none, which every read of
  // the pool answers as a webhook with no events.

  // The events DB of `webhookId`, opened; for a write, so a webhook with no
  // file yet gets one (EventsDb::create: one disk flush, and a crash leaves
  // it missing or whole). "not_found" for a webhook removed since the pool
  // was made.
  Result<std::shared_ptr<EventsDb>> get(const std::string& webhookId) EXCLUDES(poolMutex_);
  // The same for a read: null, and no file made, for a webhook that has
  // none yet.
  Result<std::shared_ptr<EventsDb>> getIfMade(const std::string& webhookId) EXCLUDES(poolMutex_);
  // The events DB of `webhookId` if the pool holds it open, as get() would
  // answer; otherwise null at once, where get() would open or make the file
  // (or wait for another caller's open of it). For a thread that must not
  // wait for the disk: the event loop.
  std::shared_ptr<EventsDb> getIfHeld(const std::string& webhookId) EXCLUDES(poolMutex_);

  // Closes the webhook's DB now, as an eviction would, if the pool holds it:
  // for a caller that knows the DB will not be wanted soon (a restart's
  // recovery reads every file once). SQLite's own open walks a list of every
  // file open in the process, so each DB left open makes every open dearer.
  void letGo(const std::string& webhookId) EXCLUDES(poolMutex_);

  // A restart's recovery reads each webhook's waiting deliveries once: if
  // the pool does not hold the webhook's DB, they are read on a connection
  // that holds the file alone (EventsDb::unfinishedOfFileAlone), far cheaper
  // than opening it here, and a get() of the webhook waits meanwhile.
  // nullopt when the pool holds it or it cannot be read so: get() it then.
  // Also nullopt if more than `mostRows` wait. `closings` is Peek::closings
  // while the file was read: its backlog holds while that does not move.
  struct ClosedFileRead {
    EventsDb::UnfinishedOfFile file;
    uint64_t closings = 0;
  };
  std::optional<ClosedFileRead> unfinishedIfClosed(const std::string& webhookId, TimePoint now,
                                                   std::optional<int> mostRows = std::nullopt)
      EXCLUDES(poolMutex_);

  // For the retention pass: whether the webhook's file may hold anything to
  // prune (EventsDb::mayNeedPruningAlone, with the pool's clock), read as
  // unfinishedIfClosed() reads, so a pass over every webhook does not open
  // them all here. nullopt when the pool holds it or it cannot be read so.
  std::optional<bool> mayNeedPruningIfClosed(const std::string& webhookId, int retentionDays,
                                             int64_t maxEvents) EXCLUDES(poolMutex_);

  // A closed DB's backlog, counted while Peek::closings was `closings`: it
  // holds while the pool has not opened the DB again since.
  struct ClosedBacklog {
    uint64_t closings = 0;
    std::vector<EventsDb::BacklogCount> backlog;
  };
  // For the backlog sampler: EventsDb::backlogOfFileAlone (with the pool's
  // clock), read as unfinishedIfClosed() reads. nullopt when the pool holds
  // the DB or the file cannot be read so.
  std::optional<ClosedBacklog> backlogIfClosed(const std::string& webhookId) EXCLUDES(poolMutex_);
  // For the admin API's statistics: EventsDb::statsOfFileAlone (with the
  // pool's clock), read as unfinishedIfClosed() reads, so a view neither
  // sets the file up for writing nor takes a place in the pool. nullopt
  // when the pool holds the DB or the file cannot be read so.
  std::optional<WebhookStats> statsIfClosed(const std::string& webhookId, int hours)
      EXCLUDES(poolMutex_);

  // For the sweep: EventsDb::waitingTargetsOfFileAlone (with the pool's
  // clock), read as unfinishedIfClosed() reads. nullopt when the pool holds
  // the DB or the file cannot be read so. None, without a read, for a DB
  // whose Peek::closedBacklog is empty.
  std::optional<std::vector<EventsDb::WaitingTarget>> waitingTargetsIfClosed(
      const std::string& webhookId, int mostRows) EXCLUDES(poolMutex_);

  // Closes the webhook's DB (once its users let go) and deletes its files.
  // From then on get() refuses the id, so a late delivery or pass cannot
  // bring back an empty file; a holder of the DB writes to the unlinked file
  // until it lets go. Webhook ids are never reused, so the refusal lasts
  // until install() brings the webhook's file back.
  Result<void> remove(const std::string& webhookId);

  // Puts a whole events DB in place for `webhookId` (a webhook moved here,
  // maybe back to the node it left): `place` writes pathFor(webhookId)
  // while no get() of the webhook runs, so none opens or creates a file
  // that `place` then replaces, and only once it is there does get() stop
  // refusing a removed id. A holder of the DB remove() took keeps writing to
  // that unlinked file, never to this one. Nothing changes when `place` fails.
  using PlaceFile = std::function<Result<void>(const std::filesystem::path& file)>;
  Result<void> install(const std::string& webhookId, const PlaceFile& place);

  // What a pass over every webhook (the backlog sampler) may look at without
  // opening files or changing which DBs stay open: the DB if it is open now
  // (its place in the LRU untouched), else how many times the pool has
  // closed it. A DB the pool holds closed is not written by this process, so
  // what was read from its file stays true while `closings` does not move.
  // A DB the pool closed as its last holder has its backlog counted on its
  // own connection first (EventsDb::backlogOnWriter): peek() hands that
  // count out while the DB stays closed, so a pass over every webhook opens
  // none of their files.
  struct Peek {
    std::shared_ptr<EventsDb> open;  // null when closed
    uint64_t closings = 0;
    // When closed: its backlog as the pool last counted it, if it did since
    // the closing `closings` counts.
    std::optional<std::vector<EventsDb::BacklogCount>> closedBacklog;
  };
  Peek peek(const std::string& webhookId) const;

  std::filesystem::path pathFor(const std::string& webhookId) const;
  size_t openCount() const;
  // Open DBs at most, now.
  size_t capacity() const EXCLUDES(poolMutex_);
  // The process's commit rounds and WAL flushes so far (every pool's: the
  // commit threads are shared, storage/commit_threads.h).
  static storage::CommitThreads::Counts commitCounts();
  // get()'s lookups so far, and those that opened the file (a miss): with
  // more busy webhooks than open files, most of an event's CPU is its
  // file's reopening.
  struct Use {
    uint64_t gets = 0;
    uint64_t opens = 0;
  };
  Use use() const EXCLUDES(poolMutex_);

 private:
  using Lru = std::list<std::pair<std::string, std::shared_ptr<EventsDb>>>;

  // Runs `read` with Peek::closings and whether the webhook's file is made
  // (false: it has had no write, and reads as empty), while the pool holds
  // the file as an open would (get(), install() and remove() of it wait),
  // unless the pool holds the DB or refuses the id. Returns whether `read` ran.
  bool readIfClosed(const std::string& webhookId,
                    const std::function<void(uint64_t closings, bool made)>& read)
      EXCLUDES(poolMutex_);
  enum class IfNoFile { kMake, kNull };
  // get() and getIfMade().
  Result<std::shared_ptr<EventsDb>> open(const std::string& webhookId, IfNoFile ifNoFile)
      EXCLUDES(poolMutex_);
  // The DB of `webhookId` if the pool holds it, now the most recently used;
  // else null.
  std::shared_ptr<EventsDb> heldLocked(const std::string& webhookId) REQUIRES(poolMutex_);
  // Waits until no get() or install() of `webhookId` works on its file.
  void waitForFileLocked(MutexLock& lock, const std::string& webhookId) REQUIRES(poolMutex_);
  // Peek::closings of `webhookId`.
  uint64_t closingsLocked(const std::string& webhookId) const REQUIRES(poolMutex_);
  // The backlog the pool counted for the closed DB since its last closing,
  // or null (open, or not counted since).
  const std::vector<EventsDb::BacklogCount>* closedBacklogLocked(const std::string& webhookId) const
      REQUIRES(poolMutex_);
  enum class FileChange {
    kRemove,   // the id is refused from now on
    kReplace,  // get() of the id waits until the caller erases it from opening_
  };
  // Takes the webhook's DB out of the LRU, if it is there.
  std::shared_ptr<EventsDb> takeOutLocked(const std::string& webhookId) REQUIRES(poolMutex_);
  // Hands `dbs` to closer_; the caller closes what does not fit in its
  // queue (kMaxWaitingToClose) itself, so a closer that falls behind slows
  // evictions rather than holding more files open.
  struct Closing {
    std::string webhookId;
    uint64_t closings = 0;  // Peek::closings once this closing was counted
    std::shared_ptr<EventsDb> db;
  };
  void close(std::vector<Closing> dbs) EXCLUDES(closeMutex_);
  void closeLoop(std::stop_token stop) EXCLUDES(closeMutex_);
  // Lets go of the DB, after emptying its WAL into the file if it grew past
  // kCheckpointOnCloseBytes or the pool is going, and counting its backlog
  // for peek() if nobody else holds it.
  void checkpointAndClose(Closing closing) EXCLUDES(poolMutex_);
  static constexpr size_t kMaxWaitingToClose = 64;
  // A WAL left behind costs its disk space and a read at the next open
  // (about 0.3 ms of CPU per MiB), against two disk flushes to empty it.
  static constexpr std::uintmax_t kCheckpointOnCloseBytes = 1 << 20;

  // Once no get() or install() works on the webhook's file: marks the id
  // for `change`, takes its DB out of the pool (counted as a closing) and
  // lets go of it, outside the lock.
  void closeForFile(const std::string& webhookId, FileChange change) EXCLUDES(poolMutex_);

  const std::filesystem::path dataDir_;
  const DbOptions options_;
  const Clock& clock_;
  // Sets capacity_ from webhooks_ (sized by the node only).
  void resizeLocked() REQUIRES(poolMutex_);

  const std::optional<size_t> holdable_;

  mutable Mutex poolMutex_;
  size_t capacity_ GUARDED_BY(poolMutex_);
  // Webhook files in the data folder (sized by the node only).
  size_t webhooks_ GUARDED_BY(poolMutex_) = 0;
  Lru lru_ GUARDED_BY(poolMutex_);  // front: most recently used
  std::unordered_map<std::string, Lru::iterator> index_ GUARDED_BY(poolMutex_);
  // Webhook ids whose files remove() deleted (and install() did not bring back).
  std::unordered_set<std::string> removed_ GUARDED_BY(poolMutex_);
  // Webhook ids whose file a get() is opening or an install() placing now,
  // without the lock; opened_ wakes the callers that wait for one of them.
  std::unordered_set<std::string> opening_ GUARDED_BY(poolMutex_);
  std::condition_variable_any opened_;
  // Evictions and removals per id.
  std::unordered_map<std::string, uint64_t> closings_ GUARDED_BY(poolMutex_);
  // Peek::closedBacklog of closed DBs, with the closings it was counted at.
  std::unordered_map<std::string, ClosedBacklog> closedBacklogs_ GUARDED_BY(poolMutex_);
  Use use_ GUARDED_BY(poolMutex_);

  Mutex closeMutex_;
  std::deque<Closing> waitingToClose_ GUARDED_BY(closeMutex_);
  std::condition_variable_any toClose_;
  std::atomic<bool> going_{false};  // the destructor runs: every WAL is emptied
  std::jthread closer_;  // last: stopped and joined before the members above go
};

}  // namespace webhooker
