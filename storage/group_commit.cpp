#include "storage/group_commit.h"

#include <sqlite3.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "storage/row_changes.h"
#include "storage/sqlite_database.h"

namespace webhooker::storage {

GroupCommit::GroupCommit(SQLite::Database& db, Mutex& dbMutex, StatementCache& statements,
                         SyncMode sync, std::chrono::microseconds linger, CommitThreads& threads,
                         std::string journalName)
    : db_(db),
      dbMutex_(dbMutex),
      statements_(statements),
      openedSync_(sync),
      linger_(linger),
      threads_(threads),
      journalName_(std::move(journalName)),
      keepsMode_(sync == SyncMode::kFull &&
                 db.execAndGet("PRAGMA journal_mode").getString() == "wal"),
      autoCheckpointFrames_(keepsMode_ ? db.execAndGet("PRAGMA wal_autocheckpoint").getInt() : 0),
      currentSync_(sync) {
  if (keepsMode_) sqlite3_wal_hook(db_.getHandle(), &GroupCommit::afterCommit, this);
}

GroupCommit::~GroupCommit() {
  {
    MutexLock lock(queueMutex_);
    stopping_ = true;
    endLingerIfDueLocked();
    unscheduled_.wait(lock, [&]() REQUIRES(queueMutex_) { return !scheduled_; });
  }
  MutexLock lock(dbMutex_);
  if (busyCache_) threads_.giveBackBusyCache();
  if (!keepsMode_) return;
  // The connection outlives this object: its opened mode, and SQLite's own
  // hook (the automatic checkpoint) back.
  try {
    useSync(openedSync_);
  } catch (...) {
  }
  sqlite3_wal_autocheckpoint(db_.getHandle(), autoCheckpointFrames_);
}

Result<void> GroupCommit::run(const char* operation, const Work& work, size_t bytes) {
  Writer self{operation, &work, bytes, {}, {}, Durability::kFlushed, std::nullopt, false, {}};
  MutexLock lock(queueMutex_);
  queue_.push_back(&self);
  ++flushedQueued_;
  endLingerIfDueLocked();
  while (true) {
    self.wake.wait(lock, [&]() REQUIRES(queueMutex_) { return self.finished || !leading_; });
    if (self.finished) return std::move(*self.result);
    // Nobody leads: this caller commits the group at the head, its own
    // write in it unless the group is full before it.
    const std::vector<Writer*> group = takeGroupLocked();
    queueMutex_.unlock();
    commit(group);
    queueMutex_.lock();
    // Their callbacks are a commit thread's: this caller (an ingest, say)
    // is answered now, not after someone else's bookkeeping.
    for (auto& w : finishGroupLocked(group)) unreported_.push_back(std::move(w));
    scheduleIfWantedLocked();
  }
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
  if (durability != Durability::kBuffered) ++flushedQueued_;
  queue_.push_back(writer.release());
  if (!leading_) handOffLocked();
  endLingerIfDueLocked();
}

void GroupCommit::scheduleIfWantedLocked() {
  if (scheduled_) return;
  const bool headLeaderless = !leading_ && !queue_.empty() && queue_.front()->done;
  if (!headLeaderless && unreported_.empty()) return;
  scheduled_ = true;
  lingering_ = unreported_.empty() && !stopping_ && lastGroupSize_ > 1 && flushedQueued_ == 0 &&
               queue_.size() < kLingerGroup;
  const auto now = CommitThreads::Clock::now();
  threads_.schedule(this, lingering_ ? now + linger_ : now);
}

void GroupCommit::endLingerIfDueLocked() {
  if (lingering_ && (flushedQueued_ > 0 || queue_.size() >= kLingerGroup || stopping_)) {
    lingering_ = false;
    threads_.hurry(this);
  }
}

size_t GroupCommit::waiting() const {
  MutexLock lock(queueMutex_);
  return queue_.size();
}

bool GroupCommit::committingLong() const {
  MutexLock lock(queueMutex_);
  return leading_ && leadIsLong_;
}

std::vector<GroupCommit::Writer*> GroupCommit::takeGroupLocked() {
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
  leadIsLong_ = group.size() >= kKeepCacheGroup || flushes(group);
  return group;
}

std::vector<std::unique_ptr<GroupCommit::Writer>> GroupCommit::finishGroupLocked(
    const std::vector<Writer*>& group) {
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
  for (Writer* w : queue_) {
    if (!w->done) {
      w->wake.notify_one();  // a waiting caller leads
      return;
    }
  }
  scheduleIfWantedLocked();
}

GroupCommit::Round GroupCommit::beginRound() {
  MutexLock lock(queueMutex_);
  lingering_ = false;
  Round round;
  round.committed = std::move(unreported_);
  unreported_.clear();
  if (!leading_ && !queue_.empty() && queue_.front()->done) round.group = takeGroupLocked();
  round.flushes = flushes(round.group);
  return round;
}

void GroupCommit::commitRound(Round& round) {
  if (!round.group.empty())
    commit(round.group, round.flushLater, round.journaled ? &round.record : nullptr);
}

namespace {

// Flushes the WAL of `db`'s database `name`: its xSync, the flush a FULL
// commit would have made. An SQLite result code.
int flushWal(sqlite3* db, const char* name) {
  sqlite3_file* wal = nullptr;
  const int rc = sqlite3_file_control(db, name, SQLITE_FCNTL_JOURNAL_POINTER, &wal);
  if (rc != SQLITE_OK) return rc;
  return wal && wal->pMethods ? wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL) : SQLITE_IOERR_FSYNC;
}

}  // namespace

int GroupCommit::afterCommit(void* self, sqlite3* db, const char* name, int frames)
    NO_THREAD_SAFETY_ANALYSIS {  // called by SQLite inside a commit: dbMutex_ is held
  const GroupCommit& group = *static_cast<const GroupCommit*>(self);
  int rc = SQLITE_OK;
  if (group.currentSync_ == SyncMode::kNormal && !group.groupCommitting_) rc = flushWal(db, name);
  // SQLite's own hook, which this one replaces, checkpoints so.
  if (group.autoCheckpointFrames_ > 0 && frames >= group.autoCheckpointFrames_)
    sqlite3_wal_checkpoint(db, name);
  return rc;
}

void GroupCommit::flushRoundAlone(Round& round) {
  MutexLock lock(dbMutex_);
  const int rc = flushWal(db_.getHandle(), "main");
  if (rc == SQLITE_OK) return;
  const Error failed = makeError(error_code::kStorageError,
                                 std::string("storage flush failed: ") + sqlite3_errstr(rc));
  for (Writer* w : round.group)
    if (w->result->ok()) w->result = failed;
}

bool GroupCommit::flushes(const std::vector<Writer*>& group) const {
  return openedSync_ == SyncMode::kFull &&
         std::any_of(group.begin(), group.end(),
                     [](const Writer* w) { return w->durability == Durability::kFlushed; });
}

void GroupCommit::endRound(Round& round) {
  MutexLock lock(queueMutex_);
  if (!round.group.empty())
    for (auto& w : finishGroupLocked(round.group)) round.committed.push_back(std::move(w));
  lock.unlock();
  for (auto& w : round.committed) w->done(std::move(*w->result));
  round.committed.clear();  // a Done's captures go before the lock is taken again
  lock.lock();
  scheduled_ = false;
  scheduleIfWantedLocked();
  if (!scheduled_) unscheduled_.notify_all();
}

void GroupCommit::commit(const std::vector<Writer*>& group, bool flushLater,
                         CommitJournal::Record* record) {
  const auto failAll = [&](const char* operation, const std::exception& e) {
    for (Writer* w : group) w->result = storageError(operation, e);
    if (record) *record = {};
  };
  MutexLock lock(dbMutex_);
  try {
    useSync(flushes(group) && !flushLater ? SyncMode::kFull : SyncMode::kNormal);
    groupCommitting_ = true;
    transact(group, record);
  } catch (const std::exception& e) {
    failAll("commit", e);
  } catch (...) {
    failAll("commit", std::runtime_error("unknown error"));
  }
  groupCommitting_ = false;
  // See "Between groups". Setting the mode does no I/O; should it still
  // fail, the next group sets it again.
  if (!keepsMode_) {
    try {
      useSync(openedSync_);
    } catch (...) {
    }
  }
  sizeCache(group.size());
}

void GroupCommit::sizeCache(size_t groupSize) {
  // A group smaller than kKeepCacheGroup is a quiet file's: after its
  // commit the connection gives its page cache back (clean pages only), so
  // a thousand files written now and then do not each keep their pages.
  // Its next commit reads the few pages it appends to from the OS cache.
  if (groupSize < kKeepCacheGroup) {
    shrinkCache();
    sqlite3_db_release_memory(db_.getHandle());
    return;
  }
  if (busyCache_ || !threads_.takeBusyCache()) return;
  try {
    openedCacheSize_ = db_.execAndGet("PRAGMA cache_size").getInt();
    db_.exec("PRAGMA cache_size = -" + std::to_string(kBusyCacheKiB));
    busyCache_ = true;
  } catch (const std::exception&) {
    // The cache stays as it was: slower, not wrong.
    threads_.giveBackBusyCache();
  }
}

void GroupCommit::shrinkCache() {
  if (!busyCache_) return;
  try {
    db_.exec("PRAGMA cache_size = " + std::to_string(openedCacheSize_));
  } catch (const std::exception&) {
    return;  // kept, and tried again after the next small group
  }
  busyCache_ = false;
  threads_.giveBackBusyCache();
}

void GroupCommit::transact(const std::vector<Writer*>& group, CommitJournal::Record* record) {
  // The journal's record of the transaction: its changes, the file's next
  // journal position, set in it before the commit.
  const auto commitRecorded = [&](SQLite::Transaction& txn, ChangeRecorder* changes) {
    if (changes) {
      record->position = CommitJournal::advancePosition(statements_);
      record->changes = changes->take();
      record->file = journalName_;
    }
    txn.commit();
  };
  // IMMEDIATE: the write lock comes first, so a read inside a work (an
  // idempotency check) cannot be overtaken by another connection's write.
  {
    SQLite::Transaction txn(db_, SQLite::TransactionBehavior::IMMEDIATE);
    std::optional<ChangeRecorder> changes;
    if (record) changes.emplace(db_.getHandle());
    const Pass pass = runGroup(group, false, changes ? &*changes : nullptr);
    if (pass == Pass::kTransactionLost) return;
    if (pass == Pass::kAllRan) return commitRecorded(txn, changes ? &*changes : nullptr);
    // A lone write's failure is undone with the transaction.
    if (group.size() == 1) return;
  }
  SQLite::Transaction txn(db_, SQLite::TransactionBehavior::IMMEDIATE);
  std::optional<ChangeRecorder> changes;
  if (record) changes.emplace(db_.getHandle());
  if (runGroup(group, true, changes ? &*changes : nullptr) == Pass::kTransactionLost) return;
  commitRecorded(txn, changes ? &*changes : nullptr);
}

void GroupCommit::useSync(SyncMode mode) {
  if (mode == currentSync_) return;
  statements_
      .get(mode == SyncMode::kFull ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
      ->exec();
  currentSync_ = mode;
}

GroupCommit::Pass GroupCommit::runGroup(const std::vector<Writer*>& group, bool savepoints,
                                        ChangeRecorder* changes) {
  for (Writer* w : group) {
    const size_t mark = changes ? changes->mark() : 0;
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
      if (changes) changes->forgetSince(mark);
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
