// The node's commit journal: one flush for the commits of many files. A
// commit round over two events DBs or more commits each file's group
// without a flush (synchronous=NORMAL: SQLite writes the WAL
// frames, flushes nothing), appends what each group changed to this journal
// (the rows it wrote, tagged with the file and the file's journal
// position), flushes the journal once, and only then answers (CommitThreads,
// "Journaling"). A thousand quiet webhooks then cost one sequential write and
// one fdatasync a round, not a flush per file.
//
// The journal is a ring: one file of fixed size, filled once when made, so
// that a write never allocates blocks or changes the inode. Its space is
// reused only once the files whose commits it holds are durable on their own:
// before the write head enters a segment of the ring, every file with a
// commit recorded there is flushed (its WAL's fdatasync), most of them by a
// background thread a segment ahead of the head, each file at most once for
// all its commits since its last flush. A segment of more than
// kFlushedAlone such files (a thousand quiet webhooks: about one file an
// event) is made durable by one flush of the folder's file system instead
// (syncfs), which covers every commit recorded before it.
//
// Replay: after a power loss a file may lack the tail of its commits (its
// WAL frames were never flushed); the journal still holds them. open() reads
// every intact record written since the last clean close and gives each
// file its records in order (`Replay`). Each journaled commit also sets the
// file's journal position (the table journal_position, one row) in the same
// transaction, so a file applies only the records past its own position:
// replay brings back exactly what the file lost, never a row a later commit
// of that file removed. applyJournal() is that replay for one open file.
//
// A record is whole or ignored: each carries a CRC-32C of itself, so a torn
// write (its round was never answered) reads as no record.
//
// Ownership: the caller owns the journal; the process's commit threads use
// it from useCommitJournal() until useCommitJournal(nullptr). Threading:
// append() from any thread, concurrently (each round's records get a
// region of their own); close() once nothing appends.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"

struct sqlite3;
namespace SQLite {
class Database;
}

namespace webhooker::storage {

class StatementCache;

class CommitJournal {
 public:
  static constexpr uint64_t kDefaultBytes = 64ull << 20;
  static constexpr uint64_t kMinBytes = 1ull << 20;
  static constexpr size_t kSegments = 16;
  // Files a segment's cleaning flushes one by one at most (see above).
  static constexpr size_t kFlushedAlone = 32;

  // One file's commit: its name in the journal's folder, its journal
  // position, and what that commit changed (storage/row_changes.h).
  struct Record {
    std::string file;
    int64_t position = 0;
    std::string changes;
  };
  // Applies `records` (one file's, in commit order) to `file`, the name a
  // Record carries; an error stops open().
  using Replay =
      std::function<Result<void>(const std::string& file, const std::vector<Record>& records)>;

  // Opens the journal at `path`, or makes it `bytes` long (the size of one
  // made before stays); replays into the files what a power loss took
  // (`replay`), flushes them, and starts the ring afresh. storage_error when
  // the journal cannot be read, made or replayed; nothing is written then.
  static Result<std::unique_ptr<CommitJournal>> open(const std::filesystem::path& path,
                                                     uint64_t bytes, const Replay& replay);
  ~CommitJournal();
  CommitJournal(const CommitJournal&) = delete;
  CommitJournal& operator=(const CommitJournal&) = delete;

  // Writes `records` (a round's) and flushes them: once ok, they survive
  // power loss. storage_error if they cannot be (or do not fit in a
  // segment of the ring): the caller then flushes each file alone.
  Result<void> append(const std::vector<const Record*>& records) EXCLUDES(mutex_);

  // Flushes the folder's file system (every file the ring holds commits
  // of) and marks the journal closed: the next open() replays nothing
  // written before. Call once no file commits through it any more.
  Result<void> close() EXCLUDES(mutex_);

  // The position a journaled commit gives its file: one more than the
  // file's last, set in the open transaction on `statements`' connection.
  static int64_t advancePosition(StatementCache& statements);
  // Replay into one file: in one transaction, writes again (or deletes) by
  // key the rows of the records past the file's journal position, in
  // order, and moves the position to the last.
  static Result<void> applyJournal(SQLite::Database& db, const std::vector<Record>& records);

  // Counts since open, for the metrics and the bench.
  struct Counts {
    uint64_t appends = 0;      // rounds written and flushed
    uint64_t fileFlushes = 0;  // files flushed so that the ring could be reused
    uint64_t folderFlushes = 0;  // ... and flushes of the folder's file system for it
  };
  Counts counts() const EXCLUDES(mutex_);

 private:
  CommitJournal(int fd, std::filesystem::path folder, uint64_t bytes, uint64_t nextLsn);
  // The segment holding ring offset `offset`.
  size_t segmentOf(uint64_t offset) const;
  // Flushes the files with commits in `segment` not flushed since; true
  // once none is left there.
  bool cleanSegment(size_t segment, MutexLock& lock) REQUIRES(mutex_);
  // The background thread: cleans the segment ahead of the head.
  void cleanAhead();
  // Flushes `file` (its WAL, else the file itself); ok if it is gone.
  Result<void> flushFile(const std::string& file) const;
  // Flushes the folder's file system: every file of it.
  Result<void> flushFolder() const;
  // Writes and flushes the header: records before `cleanLsn` are in their
  // files; `closed`: and so is every other.
  Result<void> writeHeader(uint64_t cleanLsn, bool closed) const;

  const int fd_;
  const std::filesystem::path folder_;
  const uint64_t bytes_;
  const uint64_t segmentBytes_;

  mutable Mutex mutex_;
  uint64_t head_ GUARDED_BY(mutex_);  // ring offset of the next record
  uint64_t nextLsn_ GUARDED_BY(mutex_);
  // Per segment: each file with commits there, and the LSN of its last one.
  std::vector<std::unordered_map<std::string, uint64_t>> segments_ GUARDED_BY(mutex_);
  std::vector<bool> cleaning_ GUARDED_BY(mutex_);  // a thread flushes that segment now
  // Each file flushed, and the next LSN when its flush began.
  std::unordered_map<std::string, uint64_t> flushedAt_ GUARDED_BY(mutex_);
  // The next LSN when the last flush of the whole folder began.
  uint64_t folderFlushedAt_ GUARDED_BY(mutex_) = 0;
  size_t wantClean_ GUARDED_BY(mutex_) = kSegments;  // segment for cleanAhead (none)
  bool stopping_ GUARDED_BY(mutex_) = false;
  Counts counts_ GUARDED_BY(mutex_);
  std::condition_variable_any changed_;
  std::thread cleaner_;  // last: joined before the members above go
};

// From now on every commit round of the process over two files or more is
// made durable by `journal` (CommitThreads::shared()); nullptr: by each
// file's own flush again (before the journal is closed).
void useCommitJournal(CommitJournal* journal);

}  // namespace webhooker::storage
