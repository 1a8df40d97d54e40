#include "storage/events_db_pool.h"

#include <algorithm>
#include <vector>

#include "base/thread_name.h"
#include "storage/sqlite_database.h"

namespace webhooker {

namespace {

// The webhooks' files in `dataDir`: events-<id>.db, without -wal and -shm.
size_t countWebhookFiles(const std::filesystem::path& dataDir) {
  size_t count = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dataDir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("events-") && name.ends_with(".db")) ++count;
  }
  return count;
}

}  // namespace

size_t EventsDbPool::holdableFor(uint64_t descriptorLimit, uint64_t httpConnections,
                                 uint64_t memoryBytes) {
  // The connections may take at most half of what the others leave: a
  // limit below --max-connections still leaves the DBs the other half.
  const uint64_t left =
      descriptorLimit > kOtherDescriptors ? descriptorLimit - kOtherDescriptors : 0;
  const uint64_t byDescriptors = (left - std::min(httpConnections, left / 2)) / kDescriptorsPerDb;
  const uint64_t byMemory = std::min(kMemoryBudgetBytes, memoryBytes / 4) / kBytesPerDb;
  return static_cast<size_t>(std::max<uint64_t>(1, std::min(byDescriptors, byMemory)));
}

size_t EventsDbPool::capacityFor(size_t webhooks, size_t holdable) {
  return webhooks <= holdable ? holdable : std::min(kDefaultCapacity, holdable);
}

EventsDbPool::EventsDbPool(std::filesystem::path dataDir, DbOptions options, const Clock& clock,
                           Size size)
    : dataDir_(std::move(dataDir)),
      options_(options),
      clock_(clock),
      holdable_(size.holdable),
      capacity_(size.capacity > 0 ? size.capacity : 1),
      closer_([this](std::stop_token stop) { closeLoop(stop); }) {
  if (!holdable_) return;
  MutexLock lock(poolMutex_);
  webhooks_ = countWebhookFiles(dataDir_);
  resizeLocked();
}

void EventsDbPool::resizeLocked() {
  if (holdable_) capacity_ = capacityFor(webhooks_, *holdable_);
}

size_t EventsDbPool::capacity() const {
  MutexLock lock(poolMutex_);
  return capacity_;
}

EventsDbPool::~EventsDbPool() {
  std::vector<Closing> open;
  {
    MutexLock lock(poolMutex_);
    for (auto& entry : lru_) open.push_back({entry.first, 0, std::move(entry.second)});
    lru_.clear();
    index_.clear();
  }
  going_ = true;
  close(std::move(open));
  closer_.request_stop();
  closer_.join();  // it empties its queue first
}

void EventsDbPool::close(std::vector<Closing> dbs) {
  for (auto& db : dbs) {
    {
      MutexLock lock(closeMutex_);
      if (waitingToClose_.size() < kMaxWaitingToClose) {
        waitingToClose_.push_back(std::move(db));
        toClose_.notify_one();
        continue;
      }
    }
    checkpointAndClose(std::move(db));
  }
}

void EventsDbPool::closeLoop(std::stop_token stop) {
  nameThisThread("wh-db-closer");
  MutexLock lock(closeMutex_);
  while (true) {
    toClose_.wait(lock, stop, [&]() REQUIRES(closeMutex_) { return !waitingToClose_.empty(); });
    if (waitingToClose_.empty()) return;  // stop requested, nothing left
    Closing closing = std::move(waitingToClose_.front());
    waitingToClose_.pop_front();
    lock.unlock();
    checkpointAndClose(std::move(closing));
    lock.lock();
  }
}

void EventsDbPool::checkpointAndClose(Closing closing) {
  const std::shared_ptr<EventsDb>& db = closing.db;
  // Nobody else holds it and no write of it waits, so nothing writes it
  // before it closes: its count holds until the pool opens the file again
  // (and the next closing moves Peek::closings past the one counted here).
  if (!going_ && db.use_count() == 1 && db->writesWaiting() == 0) {
    if (auto counted = db->backlogOnWriter()) {
      MutexLock lock(poolMutex_);
      if (!index_.count(closing.webhookId) &&
          closingsLocked(closing.webhookId) == closing.closings)
        closedBacklogs_[closing.webhookId] = {closing.closings, std::move(counted.value())};
    }
  }
  // Without waiting: another connection to the file (a holder of this DB, or
  // the pool's next open of the webhook) may write all the while, and a
  // closer held up by it would hold up evictions. A WAL left behind, short
  // or long, only makes the next open read it.
  if (going_ || db->walBytes() > kCheckpointOnCloseBytes)
    (void)db->checkpointWal(EventsDb::Wait::kNo);
}

std::filesystem::path EventsDbPool::pathFor(const std::string& webhookId) const {
  return dataDir_ / ("events-" + webhookId + ".db");
}

Result<std::shared_ptr<EventsDb>> EventsDbPool::get(const std::string& webhookId) {
  return open(webhookId, IfNoFile::kMake);
}

Result<std::shared_ptr<EventsDb>> EventsDbPool::getIfMade(const std::string& webhookId) {
  return open(webhookId, IfNoFile::kNull);
}

std::shared_ptr<EventsDb> EventsDbPool::getIfHeld(const std::string& webhookId) {
  MutexLock lock(poolMutex_);
  if (opening_.count(webhookId)) return nullptr;
  std::shared_ptr<EventsDb> held = heldLocked(webhookId);
  if (held) ++use_.gets;  // a miss is counted by the get() that follows
  return held;
}

std::shared_ptr<EventsDb> EventsDbPool::heldLocked(const std::string& webhookId) {
  const auto it = index_.find(webhookId);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

Result<std::shared_ptr<EventsDb>> EventsDbPool::open(const std::string& webhookId,
                                                     IfNoFile ifNoFile) {
  MutexLock lock(poolMutex_);
  waitForFileLocked(lock, webhookId);
  ++use_.gets;
  if (std::shared_ptr<EventsDb> held = heldLocked(webhookId)) return held;
  if (removed_.count(webhookId))
    return makeError(error_code::kNotFound, "webhook " + webhookId + " was deleted with its events");
  opening_.insert(webhookId);
  lock.unlock();
  // No other get(), install() or remove() of the id runs meanwhile.
  const std::filesystem::path file = pathFor(webhookId);
  std::error_code ec;
  const bool made = std::filesystem::exists(file, ec) || ec;
  const bool create = !made && ifNoFile == IfNoFile::kMake;
  Result<void> created;
  if (create) created = EventsDb::create(file, options_);
  Result<std::shared_ptr<EventsDb>> db = std::shared_ptr<EventsDb>();  // null: no file yet
  if (!created)
    db = created.error();
  else if (made || create)
    db = EventsDb::open(file, options_, clock_);
  lock.lock();
  opening_.erase(webhookId);
  opened_.notify_all();
  if (create && created) {
    ++webhooks_;
    resizeLocked();
  }
  if (!db || !db.value()) return db;
  ++use_.opens;
  lru_.emplace_front(webhookId, db.value());
  index_[webhookId] = lru_.begin();
  // Closing a DB commits what is queued and flushes: the evicted ones go to
  // the closer once the lock is let go (and close when their last holder
  // lets go).
  std::vector<Closing> evicted;
  while (lru_.size() > capacity_) {
    const std::string& evictedId = lru_.back().first;
    evicted.push_back({evictedId, ++closings_[evictedId], std::move(lru_.back().second)});
    index_.erase(evictedId);
    lru_.pop_back();
  }
  lock.unlock();
  close(std::move(evicted));
  return db;
}

EventsDbPool::Use EventsDbPool::use() const {
  MutexLock lock(poolMutex_);
  return use_;
}

void EventsDbPool::letGo(const std::string& webhookId) {
  std::vector<Closing> closing(1);
  {
    MutexLock lock(poolMutex_);
    closing[0].db = takeOutLocked(webhookId);
    if (!closing[0].db) return;
    closing[0].webhookId = webhookId;
    closing[0].closings = ++closings_[webhookId];
  }
  close(std::move(closing));
}

bool EventsDbPool::readIfClosed(const std::string& webhookId,
                                const std::function<void(uint64_t, bool)>& read) {
  MutexLock lock(poolMutex_);
  waitForFileLocked(lock, webhookId);
  if (index_.count(webhookId) || removed_.count(webhookId)) return false;
  const uint64_t closings = closingsLocked(webhookId);
  // As an open would: get(), install() and remove() of the id wait.
  opening_.insert(webhookId);
  lock.unlock();
  std::error_code ec;
  read(closings, std::filesystem::exists(pathFor(webhookId), ec) || ec);
  lock.lock();
  opening_.erase(webhookId);
  opened_.notify_all();
  return true;
}

std::optional<EventsDbPool::ClosedFileRead> EventsDbPool::unfinishedIfClosed(
    const std::string& webhookId, TimePoint now, std::optional<int> mostRows) {
  std::optional<ClosedFileRead> read;
  readIfClosed(webhookId, [&](uint64_t closings, bool made) {
    auto file = made ? EventsDb::unfinishedOfFileAlone(pathFor(webhookId), now, mostRows)
                     : EventsDb::UnfinishedOfFile();
    if (file) read = ClosedFileRead{std::move(*file), closings};
  });
  return read;
}

std::optional<bool> EventsDbPool::mayNeedPruningIfClosed(const std::string& webhookId,
                                                         int retentionDays, int64_t maxEvents) {
  std::optional<bool> mayNeed;
  readIfClosed(webhookId, [&](uint64_t, bool made) {
    mayNeed = made ? EventsDb::mayNeedPruningAlone(pathFor(webhookId), clock_.now(), retentionDays,
                                                   maxEvents)
                   : false;
  });
  return mayNeed;
}

std::optional<EventsDbPool::ClosedBacklog> EventsDbPool::backlogIfClosed(
    const std::string& webhookId) {
  std::optional<ClosedBacklog> read;
  readIfClosed(webhookId, [&](uint64_t closings, bool made) {
    auto backlog = made ? EventsDb::backlogOfFileAlone(pathFor(webhookId), clock_.now())
                        : std::vector<EventsDb::BacklogCount>();
    if (backlog) read = ClosedBacklog{closings, std::move(*backlog)};
  });
  return read;
}

std::optional<WebhookStats> EventsDbPool::statsIfClosed(const std::string& webhookId, int hours) {
  std::optional<WebhookStats> read;
  readIfClosed(webhookId, [&](uint64_t, bool made) {
    read = made ? EventsDb::statsOfFileAlone(pathFor(webhookId), clock_.now(), hours)
                : EventsDb::statsOfNoEvents(clock_.now(), hours);
  });
  return read;
}

std::optional<std::vector<EventsDb::WaitingTarget>> EventsDbPool::waitingTargetsIfClosed(
    const std::string& webhookId, int mostRows) {
  {
    // Counted as it closed, with nothing waiting: nothing can have come
    // due since, and its file is not read.
    MutexLock lock(poolMutex_);
    const auto* counted = closedBacklogLocked(webhookId);
    if (counted && counted->empty() && !opening_.count(webhookId))
      return std::vector<EventsDb::WaitingTarget>();
  }
  std::optional<std::vector<EventsDb::WaitingTarget>> waiting;
  readIfClosed(webhookId, [&](uint64_t, bool made) {
    waiting = made ? EventsDb::waitingTargetsOfFileAlone(pathFor(webhookId), clock_.now(), mostRows)
                   : std::vector<EventsDb::WaitingTarget>();
  });
  return waiting;
}

std::shared_ptr<EventsDb> EventsDbPool::takeOutLocked(const std::string& webhookId) {
  const auto it = index_.find(webhookId);
  if (it == index_.end()) return nullptr;
  std::shared_ptr<EventsDb> db = std::move(it->second->second);
  lru_.erase(it->second);
  index_.erase(it);
  return db;
}

void EventsDbPool::waitForFileLocked(MutexLock& lock, const std::string& webhookId) {
  opened_.wait(lock, [&]() REQUIRES(poolMutex_) { return !opening_.count(webhookId); });
}

void EventsDbPool::closeForFile(const std::string& webhookId, FileChange change) {
  std::shared_ptr<EventsDb> closing;
  {
    MutexLock lock(poolMutex_);
    // An open in flight would create the file again after it is deleted or
    // replaced.
    waitForFileLocked(lock, webhookId);
    (change == FileChange::kRemove ? removed_ : opening_).insert(webhookId);
    ++closings_[webhookId];
    closedBacklogs_.erase(webhookId);
    closing = takeOutLocked(webhookId);
  }
}

Result<void> EventsDbPool::remove(const std::string& webhookId) {
  closeForFile(webhookId, FileChange::kRemove);
  std::error_code ec;
  const bool existed = std::filesystem::exists(pathFor(webhookId), ec);
  auto deleted = storage::deleteDatabaseFiles(pathFor(webhookId),
                                              {"", "-wal", "-shm", EventsDb::kWritingSuffix});
  if (existed && deleted) {
    MutexLock lock(poolMutex_);
    if (webhooks_ > 0) --webhooks_;
    resizeLocked();
  }
  return deleted;
}

Result<void> EventsDbPool::install(const std::string& webhookId, const PlaceFile& place) {
  closeForFile(webhookId, FileChange::kReplace);
  std::error_code ec;
  const bool existed = std::filesystem::exists(pathFor(webhookId), ec) || ec;
  const Result<void> placed = place(pathFor(webhookId));
  MutexLock lock(poolMutex_);
  opening_.erase(webhookId);
  if (placed) removed_.erase(webhookId);
  if (placed && !existed) {
    ++webhooks_;
    resizeLocked();
  }
  opened_.notify_all();
  return placed;
}

EventsDbPool::Peek EventsDbPool::peek(const std::string& webhookId) const {
  MutexLock lock(poolMutex_);
  Peek out;
  if (auto it = index_.find(webhookId); it != index_.end()) out.open = it->second->second;
  out.closings = closingsLocked(webhookId);
  if (const auto* counted = closedBacklogLocked(webhookId)) out.closedBacklog = *counted;
  return out;
}

uint64_t EventsDbPool::closingsLocked(const std::string& webhookId) const {
  const auto it = closings_.find(webhookId);
  return it == closings_.end() ? 0 : it->second;
}

const std::vector<EventsDb::BacklogCount>* EventsDbPool::closedBacklogLocked(
    const std::string& webhookId) const {
  if (index_.count(webhookId)) return nullptr;
  const auto counted = closedBacklogs_.find(webhookId);
  if (counted == closedBacklogs_.end() || counted->second.closings != closingsLocked(webhookId))
    return nullptr;
  return &counted->second.backlog;
}

storage::CommitThreads::Counts EventsDbPool::commitCounts() {
  return storage::CommitThreads::shared().counts();
}

size_t EventsDbPool::openCount() const {
  MutexLock lock(poolMutex_);
  return lru_.size();
}

}  // namespace webhooker
