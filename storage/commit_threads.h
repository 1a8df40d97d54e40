// Internal to storage/: the threads that commit the submitted writes of every
// GroupCommit (every events DB) of the process, so a node with thousands of
// webhooks runs a few commit threads, not one per open file.
//
// A GroupCommit whose queue is headed by a submitted write (or holds
// results to report) asks for a commit thread (schedule()). A commit
// thread takes up to kMaxFilesPerRound of the files waiting and makes one
// round of them: each file's group is committed as its own leader would
// (synchronous=FULL: SQLite writes and flushes the file's WAL), those that
// flush all at once on the flush threads, the others (buffered writes: CPU
// only) on the commit thread, and only once every commit of the round is
// done is any of its writers answered. Concurrent flushes are joined by the
// file system into one journal commit and by the disk into one cache flush,
// so a round costs about the time of one flush however many files it holds:
// a thousand quiet webhooks share flushes as the writes of one busy webhook
// do. Each commit, and so each flush, stays its file's own: a file whose
// flush fails fails its own writers only, and no write is visible before
// its file's flush (GroupCommit, "Durability").
//
// Flushing the file system: once given a flush of the whole file system
// (flushFileSystemTogether(), the daemon's `--flush-scope filesystem`), a
// round whose commits would flush two files or more commits each of them
// without a flush (synchronous=NORMAL: SQLite writes the WAL frames and
// flushes nothing), then calls that flush once, and only then answers. A
// round of a thousand quiet webhooks then costs one disk flush, not a
// thousand. Two differences from flushing each file: a write is visible to
// other connections of its file from its commit, before the flush (a reader
// may see, and the engine deliver, an event whose sender is then answered an
// error: at least once, as ever); and the flush's error names no file, so
// when it fails each file of the round is flushed alone (its WAL's xSync, as
// SQLite would) and a file whose own flush fails fails its own writers only.
//
// Journaling: once given the node's commit journal (journalTogether(), the
// daemon's `--flush-scope journal`), such a round commits each file that
// journals (GroupCommit's `journalName`) without a flush, appends what each
// commit changed to the journal, flushes the journal once, and only then
// answers (CommitJournal). As with the file system's flush, a write is
// visible from its commit; when the journal cannot be written each file is
// flushed alone and a file whose own flush fails fails its own writers only.
//
// Lingering: a GroupCommit may ask to be led no sooner than a given time
// (schedule()'s `due`, see GroupCommit's "Lingering"); hurry() makes it due
// now.
//
// Ownership: shared() is the process's, never destroyed; a test may make
// its own, which must outlive every GroupCommit using it. Threading: every
// method from any thread. A GroupCommit calls schedule() and hurry() with
// its queue mutex held, so this class never calls a GroupCommit with
// mutex_ held. A GroupCommit is in a queue here only while its
// `scheduled_` is set, which its destructor waits to see cleared.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"

namespace webhooker::storage {

class CommitJournal;
class GroupCommit;

class CommitThreads {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxFilesPerRound = 256;
  // Files that may hold a busy file's page cache at once (GroupCommit,
  // "Page cache").
  static constexpr size_t kBusyCaches = 8;

  // `commitThreads` lead rounds; the commits of a round that flush run on
  // the `flushThreads` (and on its commit thread) at once, so that their
  // flushes are issued together. shared() has the daemon's numbers.
  CommitThreads(size_t commitThreads, size_t flushThreads,
                size_t busyCaches = kBusyCaches);
  ~CommitThreads();
  CommitThreads(const CommitThreads&) = delete;
  CommitThreads& operator=(const CommitThreads&) = delete;

  // The process's threads, started on first use.
  static CommitThreads& shared();

  // A flush of every file the GroupCommits write (FileSystemFlush::flush,
  // or a test's): see "Flushing the file system". Returns its error.
  using FlushAll = std::function<Result<void>()>;
  // From the next round on, rounds of two flushing files or more end with
  // one `flushAll` instead of a flush per file. Set once, before the first
  // round that may need it.
  void flushFileSystemTogether(FlushAll flushAll);
  // From the next round on, such rounds end with one write of `journal`
  // (see "Journaling"); nullptr: with a flush per file again. The journal
  // must outlive every round begun before the next call.
  void journalTogether(CommitJournal* journal);

  // `file` has work for a commit thread, no sooner than `due`. Once per
  // scheduling: not again until a round of it has begun.
  void schedule(GroupCommit* file, Clock::time_point due);
  // A scheduled `file` that waits for its `due` is led as soon as may be.
  void hurry(GroupCommit* file);

  // A busy file's page cache: true if one of the process's `busyCaches` is
  // free, now the caller's until it gives it back.
  bool takeBusyCache();
  void giveBackBusyCache();

  // Counts since start, for the metrics and the bench.
  struct Counts {
    uint64_t rounds = 0;      // rounds with at least one commit
    uint64_t walFlushes = 0;  // commits of rounds that flushed their WAL (fdatasync)
    uint64_t fileSystemFlushes = 0;  // rounds ended by one flushAll
    uint64_t journalWrites = 0;      // rounds ended by one write of the journal
  };
  Counts counts() const;

 private:
  void commitLoop();
  void flushLoop();
  // One round over `files`: their commits at once, then the answers;
  // flushed by `flushAll` or `journal` if set (as the round began).
  void round(const std::vector<GroupCommit*>& files, const FlushAll& flushAll,
             CommitJournal* journal) EXCLUDES(mutex_);
  // Runs every job of `jobs` on the flush threads and this one; returns
  // once all are done.
  void runTogether(std::vector<std::function<void()>>& jobs) EXCLUDES(mutex_);

  mutable Mutex mutex_;
  std::deque<GroupCommit*> ready_ GUARDED_BY(mutex_);
  std::unordered_map<GroupCommit*, Clock::time_point> lingering_ GUARDED_BY(mutex_);
  std::condition_variable_any readyChanged_;
  // Commits waiting for a flush thread, and how many of each round are undone.
  struct FlushJob {
    std::function<void()>* job;
    size_t* undone;
  };
  std::deque<FlushJob> flushes_ GUARDED_BY(mutex_);
  // Two conditions, each woken only for its own waiters: a flush thread
  // waits for a job (one woken per job queued), a commit thread for its
  // round's last job to be done (woken once per round, not per job).
  std::condition_variable_any flushQueued_;
  std::condition_variable_any roundDone_;
  Counts counts_ GUARDED_BY(mutex_);
  FlushAll flushAll_ GUARDED_BY(mutex_);  // empty: each file flushes its own
  CommitJournal* journal_ GUARDED_BY(mutex_) = nullptr;  // or the journal, if set
  size_t busyCachesFree_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;  // last: joined before the members above go
};

}  // namespace webhooker::storage
