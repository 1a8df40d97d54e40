// Internal to storage/: group commit. Concurrent writes to one SQLite
// connection share one transaction and so one commit. Under
// synchronous=FULL every commit is a disk flush, and flushes, not
// statements, bound how many writes a second a file takes (about 2,900
// one-write commits a second on our disk; 32 writes a commit, ~14,800).
//
// A writer queues its work and waits. The writer at the head of the queue
// leads: it takes the queued writes (up to kMaxGroupSize, kMaxGroupBytes),
// runs them in one BEGIN IMMEDIATE transaction on its own thread, each in a
// savepoint so that a write whose work fails is undone alone, commits, gives
// every writer its result and wakes the next head. Nobody returns before the
// commit that holds its work: an ok result means the write is durable. If
// the transaction cannot begin or commit, every writer of the group gets
// that error and nothing of the group is visible. A lone writer leads at
// once, so a quiet database waits for nobody.
//
// Ownership: owned with the connection it writes to (an EventsDb), together
// with that connection's statement cache. Threading: run() from any thread;
// queueMutex_ guards queue_. The leader holds the connection's mutex
// (`dbMutex`, given at construction) for the whole transaction. A Work runs
// on the leader's thread while its own caller waits: it may use its caller's
// locals, but must not take `dbMutex` itself.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "base/result.h"
#include "storage/statement_cache.h"

namespace webhooker::storage {

class GroupCommit {
 public:
  static constexpr size_t kMaxGroupSize = 128;
  // Bodies in one transaction at most (a single larger write goes alone).
  static constexpr size_t kMaxGroupBytes = 16 * 1024 * 1024;

  // Runs inside the transaction with the connection's statements. An error
  // (returned or thrown) undoes this work alone.
  using Work = std::function<Result<void>(StatementCache&)>;

  GroupCommit(SQLite::Database& db, std::mutex& dbMutex, StatementCache& statements);

  // Runs `work` in the next group and returns once that group's commit is
  // done: ok when the work is durable; its error, or the group's
  // ("storage_busy", "storage_error"), when nothing of it was written.
  // `operation` names the write in error messages; `bytes` counts toward
  // kMaxGroupBytes.
  Result<void> run(const char* operation, const Work& work, size_t bytes = 0);

  // Writers queued or running, the leader's group included.
  size_t waiting() const;

 private:
  struct Writer {
    const char* operation;
    const Work* work;
    size_t bytes;
    std::optional<Result<void>> result;
    bool done = false;
    std::condition_variable wake;
  };

  // The leader's part: one transaction for `group`; sets every result.
  void commit(const std::vector<Writer*>& group);
  // One writer's work inside its savepoint. False if the transaction itself
  // is gone (SQLite rolled it back), which fails the whole group.
  bool runInSavepoint(Writer& writer);

  SQLite::Database& db_;
  std::mutex& dbMutex_;
  StatementCache& statements_;

  mutable std::mutex queueMutex_;  // guards queue_ and every queued Writer's result/done
  std::deque<Writer*> queue_;  // front: the leader
};

}  // namespace webhooker::storage
