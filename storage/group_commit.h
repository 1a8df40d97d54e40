// Internal to storage/: group commit. Concurrent writes to one SQLite
// connection share one transaction and so one commit. Under
// synchronous=FULL every commit is a disk flush, and flushes, not
// statements, bound how many writes a second a file takes (about 2,900
// one-write commits a second on our disk; 32 writes a commit, ~14,800).
//
// A writer queues its work and waits. When nobody is committing, the writer
// at the head of the queue leads: it takes the queued writes (up to
// kMaxGroupSize, kMaxGroupBytes), runs them in one BEGIN IMMEDIATE
// transaction on its own thread, commits, gives every writer its result and
// hands the lead to the next head. A write whose work fails is undone alone:
// the transaction is rolled back and the group run again, each write in a
// savepoint. Not every group pays for savepoints, because a savepoint copies
// each existing page its write changes to the statement journal (30 pwrite
// calls per ingested event with deliveries alongside, three times the
// WAL's), and a failed work is rare (a delivery gone, an attempt already
// recorded). Nobody is answered before the commit that
// holds its work: an ok result means the write is durable. If the
// transaction cannot begin or commit, every writer of the group gets that
// error and nothing of the group is visible. A lone writer leads at once,
// so a quiet database waits for nobody.
//
// A submitted write (submit()) does not wait: its caller goes on, and a
// `Done` callback gets the result after the commit. Its caller's thread is
// not there to lead, so when nobody leads and no caller waits to, a commit
// thread leads (CommitThreads: a few threads for every GroupCommit of the
// process, not one each, whose rounds commit many files' groups at once).
// A run() caller waiting behind submitted writes leads them itself when
// nobody leads, so it never waits for a commit thread. Every Done runs on a
// commit thread, in commit order.
//
// Ownership: owned with the connection it writes to (an EventsDb), together
// with that connection's statement cache; destroying it commits what is
// still queued first (so it must not be destroyed on a commit thread: a
// Done must not hold the last reference to its owner). Threading: run() and
// submit() from any thread; queueMutex_ guards the queue state. The leader
// holds the connection's mutex (`dbMutex`, given at construction) for the
// whole transaction. A Work runs on the leader's thread: it may use its
// caller's locals (run() waits), but must not take `dbMutex` itself. A Done
// runs on a commit thread after the commit, with no lock of this class
// held; it must not wait for a submitted write (every commit thread may be
// waiting so).
//
// Durability: a group is committed with the connection's synchronous mode
// (SyncMode) unless every write in it is kBuffered; such a group commits
// under synchronous=NORMAL, without a disk flush. WAL frames are appended in
// order, so the next flushed commit makes the buffered ones durable too.
// Whoever leads, a group's writes are visible only once its commit (and
// flush) is done, and a commit whose flush fails is SQLite's failed commit:
// every writer of the group gets the error. Except in a round that flushes
// the file system once for many files (CommitThreads, "Flushing the file
// system"), or that the commit journal makes durable ("Journaling"; a file
// that journals is given a `journalName` and has the table
// journal_position): there the group commits under NORMAL, is visible from
// then on, its changes recorded for the journal, and its writers are
// answered after that flush or journal write.
//
// Between groups: a connection in WAL mode opened FULL keeps the mode its
// last group committed under, so a node whose rounds all journal (or all
// flush) never switches (a switch prepares the PRAGMA again: ~3% of a
// many-webhook node's CPU when it was made twice a group). Others still
// commit on it directly (EventsDb's redrive and retention): a commit that
// is not a group's and finds it NORMAL is flushed right after by the
// connection's WAL hook, before that commit returns, so it is as durable as
// the opened mode says; a failed flush is that commit's error (SQLite has
// committed it by then: visible, and reported failed). The hook also runs
// SQLite's automatic checkpoint, which it replaces. Any other connection
// goes back to its opened mode after every group.
//
// Lingering: a commit costs about the same for one write as for ten (the
// transaction's locks, the WAL frames of the pages it touched). When only
// buffered writes are queued and the last group held more than one (writes
// are streaming in), a commit thread leads no sooner than kLinger later,
// or once kLingerGroup of them are queued. A flushed write, a run() caller
// or the destructor ends the wait at once; a lone stream of writes is never
// held.
//
// Page cache: the connection keeps the small cache it was opened with
// while its groups are small (a quiet file; after such a group it gives
// its clean pages back). A group of kKeepCacheGroup writes or more is a
// busy file's: its connection's cache grows to kBusyCacheKiB, one of the
// process's CommitThreads::kBusyCaches, so that its next groups find the
// index pages their writes touch (random ones: deliveries are found by
// id) in the cache rather than read them from the OS and spill them to the
// WAL mid-transaction. The next small group gives it back.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "storage/commit_journal.h"
#include "storage/commit_threads.h"
#include "storage/db_options.h"
#include "storage/statement_cache.h"

struct sqlite3;

namespace webhooker::storage {

// What an ok result of a write promises.
enum class Durability {
  kFlushed,   // on disk as the connection's SyncMode says (FULL: survives power loss)
  kBuffered,  // in the WAL file: survives the process dying, not the machine
};

class ChangeRecorder;

class GroupCommit {
 public:
  static constexpr size_t kMaxGroupSize = 128;
  // Bodies in one transaction at most (a single larger write goes alone).
  static constexpr size_t kMaxGroupBytes = 16 * 1024 * 1024;
  // See "Lingering" above.
  static constexpr std::chrono::microseconds kLinger{1000};
  static constexpr size_t kLingerGroup = 32;
  // See "Page cache" above.
  static constexpr size_t kKeepCacheGroup = 8;
  static constexpr int kBusyCacheKiB = 2048;

  // Runs inside the transaction with the connection's statements. An error
  // (returned or thrown) undoes this work alone. May run twice: when
  // another work of its group fails, the group runs again from its start,
  // so a work changes nothing but the database and what it returns.
  using Work = std::function<Result<void>(StatementCache&)>;
  // Gets a submitted write's result once its group is committed (or
  // failed). Must not throw.
  using Done = std::function<void(Result<void>)>;

  // `sync` is the mode `db` was opened with; `linger` the longest wait of
  // buffered writes for company (see "Lingering"); `threads` lead the
  // submitted writes; `journalName` names the file in the commit journal
  // (empty: it never journals).
  GroupCommit(SQLite::Database& db, Mutex& dbMutex, StatementCache& statements, SyncMode sync,
              std::chrono::microseconds linger = kLinger,
              CommitThreads& threads = CommitThreads::shared(), std::string journalName = {});
  ~GroupCommit();
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Runs `work` in the next group and returns once that group's commit is
  // done: ok when the work is durable; its error, or the group's
  // ("storage_busy", "storage_error"), when nothing of it was written.
  // `operation` names the write in error messages; `bytes` counts toward
  // kMaxGroupBytes.
  Result<void> run(const char* operation, const Work& work, size_t bytes = 0);
  // Queues `work` for the next group and returns at once; `done` gets what
  // run() would have returned, on a commit thread.
  void submit(const char* operation, Work work, Done done, size_t bytes = 0,
              Durability durability = Durability::kFlushed);

  // Writers queued or running, the leader's group included.
  size_t waiting() const;
  // Whether the group being committed now (so holding, or about to take,
  // the connection's mutex; writes merely queued do not count) flushes the
  // disk (see flushes()) or is a busy file's (kKeepCacheGroup writes or
  // more): a reader waiting for the connection would wait for the flush, or
  // for commit after commit.
  bool committingLong() const;

 private:
  friend class CommitThreads;

  struct Writer {
    const char* operation;
    const Work* work;  // run(): the caller's; submit(): `owned`
    size_t bytes;
    Work owned;
    Done done;  // set for a submitted write
    Durability durability = Durability::kFlushed;
    std::optional<Result<void>> result;
    bool finished = false;
    std::condition_variable_any wake;  // run(): finished, or nobody leads
  };

  // --- A commit thread's round (CommitThreads::round) ----------------------
  // This file's part of a round.
  struct Round {
    std::vector<Writer*> group;  // led by the round; empty if there was none to lead
    std::vector<std::unique_ptr<Writer>> committed;  // submitted writes whose Done is due
    bool flushes = false;  // the group's commit flushes the disk
    // ... but commits without it: the round flushes the file system after
    // (CommitThreads, "Flushing the file system"), or the journal.
    bool flushLater = false;
    bool journaled = false;        // made durable by the commit journal ...
    CommitJournal::Record record;  // ... with this (empty file: nothing committed)
  };
  // Whether this file's commits may go to the commit journal.
  bool journals() const { return !journalName_.empty(); }
  // Takes the lead of the queue's head, if nobody leads and a submitted
  // write heads it, and the results a run() caller left to report.
  Round beginRound() EXCLUDES(queueMutex_);
  // Commits the round's group, as run() would; on any thread.
  void commitRound(Round& round) EXCLUDES(queueMutex_);
  // After a flushLater commit whose file-system flush failed: flushes this
  // file's WAL alone; if that fails too, the group's writers get the error.
  void flushRoundAlone(Round& round) EXCLUDES(queueMutex_);
  // Answers the round's writers, runs the due Dones, and asks for a commit
  // thread again if there is work left; the last this class touches of
  // *this when it does not (the destructor may go on).
  void endRound(Round& round) EXCLUDES(queueMutex_);

  // The group at the head of the queue (up to kMaxGroupSize,
  // kMaxGroupBytes), now led by the caller.
  std::vector<Writer*> takeGroupLocked() REQUIRES(queueMutex_);
  // Ends the lead of `group`, whose results are set: its writers are
  // finished and taken off the queue, the lead handed on. Returns the
  // group's submitted writers, whose Done is still to run.
  std::vector<std::unique_ptr<Writer>> finishGroupLocked(const std::vector<Writer*>& group)
      REQUIRES(queueMutex_);
  // Wakes a waiting run() caller to lead, or asks for a commit thread.
  void handOffLocked() REQUIRES(queueMutex_);
  // Asks the commit threads for a round unless one is asked for already
  // or there is nothing for it (see "Lingering" for when it is due).
  void scheduleIfWantedLocked() REQUIRES(queueMutex_);
  // Makes a lingering round due now once the queue need not wait any more.
  void endLingerIfDueLocked() REQUIRES(queueMutex_);
  // The leader's part: one transaction for `group` in the synchronous mode
  // it needs (without a flush if `flushLater`); sets every result, and
  // `record` (if given) to what the commit changed.
  void commit(const std::vector<Writer*>& group, bool flushLater = false,
              CommitJournal::Record* record = nullptr) EXCLUDES(queueMutex_);
  // Whether `group`'s commit flushes the disk: the connection is FULL and
  // not every write in it is kBuffered.
  bool flushes(const std::vector<Writer*>& group) const;
  // commit()'s transaction; throws when SQLite cannot begin or commit it.
  void transact(const std::vector<Writer*>& group, CommitJournal::Record* record)
      REQUIRES(dbMutex_);
  // How a run of a group's works ended.
  enum class Pass {
    kAllRan,           // each result set (with savepoints, failed ones undone)
    kWorkFailed,       // without savepoints: stopped at a failed work
    kTransactionLost,  // SQLite rolled the transaction back: every writer has the error
  };
  // The group's writes one after another in the open transaction, each in
  // a savepoint if `savepoints`; `changes` (if given) forgets what a write
  // undone changed.
  Pass runGroup(const std::vector<Writer*>& group, bool savepoints, ChangeRecorder* changes);
  // One writer's work; its result set, whatever it throws.
  void runWork(Writer& writer);
  // Sets the connection's synchronous mode, unless it is in it already.
  void useSync(SyncMode mode) REQUIRES(dbMutex_);
  // The connection's WAL hook (see "Between groups"): runs inside every
  // commit on it, so with dbMutex_ held by whoever commits.
  static int afterCommit(void* self, sqlite3* db, const char* name, int frames);
  // After a group of `groupSize`: the busy file's cache, or the quiet
  // one's with its clean pages given back (see "Page cache").
  void sizeCache(size_t groupSize) REQUIRES(dbMutex_);
  // The connection's cache back to its opened size, if it had grown.
  void shrinkCache() REQUIRES(dbMutex_);

  SQLite::Database& db_;
  Mutex& dbMutex_;
  StatementCache& statements_;
  const SyncMode openedSync_;
  const std::chrono::microseconds linger_;
  CommitThreads& threads_;
  const std::string journalName_;
  // See "Between groups": whether the mode stays as the last group left it,
  // and the WAL size (frames) at which the hook checkpoints.
  const bool keepsMode_;
  const int autoCheckpointFrames_;
  SyncMode currentSync_ GUARDED_BY(dbMutex_);
  bool groupCommitting_ GUARDED_BY(dbMutex_) = false;  // afterCommit leaves it alone
  bool busyCache_ GUARDED_BY(dbMutex_) = false;  // holds one of threads_' busy caches
  int openedCacheSize_ GUARDED_BY(dbMutex_) = 0;  // PRAGMA cache_size before it grew

  // Guards the members below and every queued Writer's result and finished.
  mutable Mutex queueMutex_;
  // front: the leader's group; submitted writers owned here
  std::deque<Writer*> queue_ GUARDED_BY(queueMutex_);
  bool leading_ GUARDED_BY(queueMutex_) = false;  // a group is being committed
  bool leadIsLong_ GUARDED_BY(queueMutex_) = false;  // see committingLong()
  // A round is asked for or running (CommitThreads holds this object).
  bool scheduled_ GUARDED_BY(queueMutex_) = false;
  bool lingering_ GUARDED_BY(queueMutex_) = false;  // that round is due later
  size_t flushedQueued_ GUARDED_BY(queueMutex_) = 0;  // queued writes not kBuffered
  size_t lastGroupSize_ GUARDED_BY(queueMutex_) = 0;
  // Submitted writes a run() caller committed; a round runs their Done.
  std::vector<std::unique_ptr<Writer>> unreported_ GUARDED_BY(queueMutex_);
  // The destructor runs: rounds go on until all is reported.
  bool stopping_ GUARDED_BY(queueMutex_) = false;
  std::condition_variable_any unscheduled_;  // scheduled_ cleared
};

}  // namespace webhooker::storage
