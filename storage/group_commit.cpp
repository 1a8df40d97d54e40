#include "storage/group_commit.h"

#include <sqlite3.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "base/thread_name.h"
#include "storage/sqlite_database.h"

namespace webhooker::storage {

GroupCommit::GroupCommit(SQLite::Database& db, Mutex& dbMutex, StatementCache& statements,
                         SyncMode sync, std::chrono::microseconds linger)
    : db_(db),
      dbMutex_(dbMutex),
      statements_(statements),
      openedSync_(sync),
      linger_(linger),
      currentSync_(sync) {}

GroupCommit::~GroupCommit() {
  {
    MutexLock lock(queueMutex_);
    stopping_ = true;
  }
  flushWanted_.notify_one();
  if (flusher_.joinable()) flusher_.join();
}

Result<void> GroupCommit::run(const char* operation, const Work& work, size_t bytes) {
  Writer self{operation, &work, bytes, {}, {}, Durability::kFlushed, std::nullopt, false, {}};
  MutexLock lock(queueMutex_);
  queue_.push_back(&self);
  ++flushedQueued_;
  endLingerIfDueLocked();
  self.wake.wait(lock, [&]() REQUIRES(queueMutex_) {
    return self.finished || (!leading_ && queue_.front() == &self);
  });
  if (self.finished) return std::move(*self.result);
  auto submitted = leadLocked();
  if (!submitted.empty()) {
    // Their callbacks are the flusher's: this caller (an ingest, say) is
    // answered now, not after someone else's bookkeeping.
    for (auto& w : submitted) unreported_.push_back(std::move(w));
    flushWanted_.notify_one();
  }
  return std::move(*self.result);
}

void GroupCommit::submit(const char* operation, Work work, Done done, size_t bytes,
                         Durability durability) {
  auto writer = std::make_unique<Writer>();
  writer->operation = operation;
  writer->owned = std::move(work);
  writer->work = &writer->owned;
  writer->bytes = bytes;
  writer->done = std::move(done);
  writer->durability = durability;
  MutexLock lock(queueMutex_);
  if (!flusher_.joinable()) flusher_ = std::thread([this] { flush(); });
  if (durability != Durability::kBuffered) ++flushedQueued_;
  queue_.push_back(writer.release());
  if (!leading_ && queue_.size() == 1) flushWanted_.notify_one();
  endLingerIfDueLocked();
}

void GroupCommit::endLingerIfDueLocked() {
  if (lingering_ && (flushedQueued_ > 0 || queue_.size() >= kLingerGroup)) {
    lingering_ = false;
    flushWanted_.notify_one();
  }
}

void GroupCommit::lingerLocked(MutexLock& lock) {
  if (lastGroupSize_ <= 1 || flushedQueued_ > 0 || queue_.size() >= kLingerGroup) return;
  lingering_ = true;
  flushWanted_.wait_for(lock, linger_, [&]() REQUIRES(queueMutex_) {
    return !lingering_ || stopping_;
  });
  lingering_ = false;
}

size_t GroupCommit::waiting() const {
  MutexLock lock(queueMutex_);
  return queue_.size();
}

std::vector<std::unique_ptr<GroupCommit::Writer>> GroupCommit::leadLocked() {
  leading_ = true;
  std::vector<Writer*> group;
  size_t groupBytes = 0;
  for (Writer* w : queue_) {
    if (!group.empty() &&
        (group.size() == kMaxGroupSize || groupBytes + w->bytes > kMaxGroupBytes))
      break;
    group.push_back(w);
    groupBytes += w->bytes;
  }
  queueMutex_.unlock();
  commit(group);
  queueMutex_.lock();
  leading_ = false;
  std::vector<std::unique_ptr<Writer>> submitted;
  lastGroupSize_ = group.size();
  for (Writer* w : group) {
    queue_.pop_front();
    if (w->durability != Durability::kBuffered) --flushedQueued_;
    w->finished = true;
    if (w->done) submitted.emplace_back(w);
    else w->wake.notify_one();
  }
  handOffLocked();
  return submitted;
}

void GroupCommit::handOffLocked() {
  if (queue_.empty()) return;
  if (queue_.front()->done) flushWanted_.notify_one();
  else queue_.front()->wake.notify_one();
}

void GroupCommit::flush() {
  nameThisThread("wh-commit");
  MutexLock lock(queueMutex_);
  const auto mine = [&]() REQUIRES(queueMutex_) {
    return !leading_ && !queue_.empty() && queue_.front()->done;
  };
  while (true) {
    flushWanted_.wait(lock, [&]() REQUIRES(queueMutex_) {
      return mine() || !unreported_.empty() || (stopping_ && queue_.empty());
    });
    std::vector<std::unique_ptr<Writer>> committed = std::move(unreported_);
    unreported_.clear();
    if (mine() && committed.empty()) lingerLocked(lock);
    if (mine()) {
      for (auto& w : leadLocked()) committed.push_back(std::move(w));
    } else if (committed.empty()) {
      return;  // stopping, and everything is committed and reported
    }
    lock.unlock();
    for (auto& w : committed) w->done(std::move(*w->result));
    committed.clear();  // a Done's captures go before the lock is taken again
    lock.lock();
  }
}

void GroupCommit::commit(const std::vector<Writer*>& group) {
  const auto failAll = [&](const char* operation, const std::exception& e) {
    for (Writer* w : group) w->result = storageError(operation, e);
  };
  const bool buffered = std::none_of(group.begin(), group.end(), [](const Writer* w) {
    return w->durability == Durability::kFlushed;
  });
  MutexLock lock(dbMutex_);
  try {
    useSync(buffered ? SyncMode::kNormal : openedSync_);
    transact(group);
  } catch (const std::exception& e) {
    failAll("commit", e);
  } catch (...) {
    failAll("commit", std::runtime_error("unknown error"));
  }
  // Between groups the connection is in its opened mode, so that a write
  // made on it directly (a redrive, a retention pass) is as durable as its
  // answer says. Setting the mode does no I/O; should it still fail, the
  // next group sets it again.
  try {
    useSync(openedSync_);
  } catch (...) {
  }
}

void GroupCommit::transact(const std::vector<Writer*>& group) {
  // IMMEDIATE: the write lock comes first, so a read inside a work (an
  // idempotency check) cannot be overtaken by another connection's write.
  {
    SQLite::Transaction txn(db_, SQLite::TransactionBehavior::IMMEDIATE);
    const Pass pass = runGroup(group, false);
    if (pass == Pass::kTransactionLost) return;
    if (pass == Pass::kAllRan) return txn.commit();
    // A lone write's failure is undone with the transaction.
    if (group.size() == 1) return;
  }
  SQLite::Transaction txn(db_, SQLite::TransactionBehavior::IMMEDIATE);
  if (runGroup(group, true) == Pass::kTransactionLost) return;
  txn.commit();
}

void GroupCommit::useSync(SyncMode mode) {
  if (mode == currentSync_) return;
  statements_
      .get(mode == SyncMode::kFull ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
      ->exec();
  currentSync_ = mode;
}

GroupCommit::Pass GroupCommit::runGroup(const std::vector<Writer*>& group, bool savepoints) {
  for (Writer* w : group) {
    if (savepoints) statements_.get("SAVEPOINT write")->exec();
    runWork(*w);
    if (sqlite3_get_autocommit(db_.getHandle())) {
      // SQLite ended the transaction (an I/O error, a full disk): the
      // writes before this one are gone too.
      const Error lost = w->result->ok() ? makeError(error_code::kStorageError,
                                                     std::string("storage ") + w->operation +
                                                         " failed: the transaction was rolled back")
                                         : w->result->error();
      for (Writer* other : group) other->result = lost;
      return Pass::kTransactionLost;
    }
    if (!w->result->ok()) {
      if (!savepoints) return Pass::kWorkFailed;
      statements_.get("ROLLBACK TO write")->exec();
    }
    if (savepoints) statements_.get("RELEASE write")->exec();
  }
  return Pass::kAllRan;
}

void GroupCommit::runWork(Writer& writer) {
  try {
    writer.result = (*writer.work)(statements_);
  } catch (const std::exception& e) {
    writer.result = storageError(writer.operation, e);
  } catch (...) {
    writer.result = storageError(writer.operation, std::runtime_error("unknown error"));
  }
}

}  // namespace webhooker::storage
