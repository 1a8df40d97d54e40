#include "storage/commit_threads.h"

#include <algorithm>

#include "base/thread_name.h"
#include "storage/commit_journal.h"
#include "storage/group_commit.h"

namespace webhooker::storage {

CommitThreads::CommitThreads(size_t commitThreads, size_t flushThreads, size_t busyCaches)
    : busyCachesFree_(busyCaches) {
  for (size_t i = 0; i < commitThreads; ++i) threads_.emplace_back([this] { commitLoop(); });
  for (size_t i = 0; i < flushThreads; ++i) threads_.emplace_back([this] { flushLoop(); });
}

CommitThreads::~CommitThreads() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  readyChanged_.notify_all();
  flushQueued_.notify_all();
  roundDone_.notify_all();
  for (std::thread& t : threads_) t.join();
}

CommitThreads& CommitThreads::shared() {
  // Two rounds at a time; up to 22 flushes at once, so that the senders in
  // flight over many webhooks (64 connections) wait for about one flush
  // each, not a queue of them (20 threads in all beside the daemon's 36
  // keeps it under 64). Never destroyed: a GroupCommit destroyed during
  // exit may still need it.
  static CommitThreads* const threads = new CommitThreads(2, 20);
  return *threads;
}

void CommitThreads::schedule(GroupCommit* file, Clock::time_point due) {
  {
    MutexLock lock(mutex_);
    if (due > Clock::now()) {
      lingering_.emplace(file, due);
    } else {
      ready_.push_back(file);
    }
  }
  readyChanged_.notify_one();
}

void CommitThreads::hurry(GroupCommit* file) {
  {
    MutexLock lock(mutex_);
    if (lingering_.erase(file) == 0) return;  // its round has begun
    ready_.push_back(file);
  }
  readyChanged_.notify_one();
}

bool CommitThreads::takeBusyCache() {
  MutexLock lock(mutex_);
  if (busyCachesFree_ == 0) return false;
  --busyCachesFree_;
  return true;
}

void CommitThreads::giveBackBusyCache() {
  MutexLock lock(mutex_);
  ++busyCachesFree_;
}

CommitThreads::Counts CommitThreads::counts() const {
  MutexLock lock(mutex_);
  return counts_;
}

void CommitThreads::commitLoop() {
  nameThisThread("wh-commit");
  MutexLock lock(mutex_);
  while (!stopping_) {
    // Lingering files whose time has come join the ready ones.
    auto wakeAt = Clock::time_point::max();
    const auto now = Clock::now();
    for (auto it = lingering_.begin(); it != lingering_.end();) {
      if (it->second <= now) {
        ready_.push_back(it->first);
        it = lingering_.erase(it);
      } else {
        wakeAt = std::min(wakeAt, it->second);
        ++it;
      }
    }
    if (ready_.empty()) {
      if (wakeAt == Clock::time_point::max()) readyChanged_.wait(lock);
      else readyChanged_.wait_until(lock, wakeAt);
      continue;
    }
    std::vector<GroupCommit*> files;
    while (!ready_.empty() && files.size() < kMaxFilesPerRound) {
      files.push_back(ready_.front());
      ready_.pop_front();
    }
    // Others may start the next round meanwhile.
    if (!ready_.empty()) readyChanged_.notify_one();
    const FlushAll flushAll = flushAll_;
    CommitJournal* const journal = journal_;
    lock.unlock();
    round(files, flushAll, journal);
    lock.lock();
  }
}

void CommitThreads::flushFileSystemTogether(FlushAll flushAll) {
  MutexLock lock(mutex_);
  flushAll_ = std::move(flushAll);
}

void CommitThreads::journalTogether(CommitJournal* journal) {
  MutexLock lock(mutex_);
  journal_ = journal;
}

void CommitThreads::round(const std::vector<GroupCommit*>& files, const FlushAll& flushAll,
                          CommitJournal* journal) {
  std::vector<GroupCommit::Round> parts;
  parts.reserve(files.size());
  for (GroupCommit* file : files) parts.push_back(file->beginRound());
  // Commits that would flush and may leave it to the round's one flush.
  const auto sharesFlush = [&](size_t i) {
    return !parts[i].group.empty() && parts[i].flushes && (!journal || files[i]->journals());
  };
  size_t sharing = 0;
  for (size_t i = 0; i < files.size(); ++i) sharing += sharesFlush(i);
  const bool together = (flushAll || journal) && sharing >= 2;
  // A commit without a flush only costs CPU: it runs here. Those that
  // wait for the disk wait together.
  bool committed = false;
  std::vector<std::function<void()>> flushing;
  std::vector<const CommitJournal::Record*> records;
  for (size_t i = 0; i < files.size(); ++i) {
    if (parts[i].group.empty()) continue;
    committed = true;
    parts[i].flushLater = together && sharesFlush(i);
    parts[i].journaled = parts[i].flushLater && journal;
    if (parts[i].flushes && !parts[i].flushLater)
      flushing.push_back([file = files[i], &part = parts[i]] { file->commitRound(part); });
    else
      files[i]->commitRound(parts[i]);
    if (parts[i].journaled && !parts[i].record.file.empty()) records.push_back(&parts[i].record);
  }
  if (!flushing.empty()) runTogether(flushing);
  size_t walFlushes = flushing.size();
  if (together && !(journal ? journal->append(records) : flushAll())) {
    // The error names no file, or the journal could not be written: each
    // is flushed alone, so that only the writers of a file that cannot be
    // written fail.
    std::vector<std::function<void()>> alone;
    for (size_t i = 0; i < files.size(); ++i)
      if (parts[i].flushLater)
        alone.push_back([file = files[i], &part = parts[i]] { file->flushRoundAlone(part); });
    runTogether(alone);
    walFlushes += alone.size();
  }
  {
    MutexLock lock(mutex_);
    if (committed) ++counts_.rounds;
    if (together) ++(journal ? counts_.journalWrites : counts_.fileSystemFlushes);
    counts_.walFlushes += walFlushes;
  }
  for (size_t i = 0; i < files.size(); ++i) files[i]->endRound(parts[i]);
}

void CommitThreads::runTogether(std::vector<std::function<void()>>& jobs) {
  size_t undone = jobs.size();
  MutexLock lock(mutex_);
  // The first stays with this thread; the others go to whichever is free.
  for (size_t i = 1; i < jobs.size(); ++i) {
    flushes_.push_back({&jobs[i], &undone});
    flushQueued_.notify_one();
  }
  std::function<void()>* mine = &jobs[0];
  while (true) {
    if (mine) {
      lock.unlock();
      (*mine)();
      lock.lock();
      --undone;
    }
    if (undone == 0) return;
    mine = nullptr;
    // Help with this round's commits not taken yet; else wait for them.
    for (auto it = flushes_.begin(); it != flushes_.end(); ++it) {
      if (it->undone == &undone) {
        mine = it->job;
        flushes_.erase(it);
        break;
      }
    }
    if (!mine) roundDone_.wait(lock);
  }
}

void CommitThreads::flushLoop() {
  nameThisThread("wh-flush");
  MutexLock lock(mutex_);
  while (true) {
    flushQueued_.wait(lock, [&]() REQUIRES(mutex_) { return stopping_ || !flushes_.empty(); });
    if (flushes_.empty()) return;  // stopping
    const FlushJob job = flushes_.front();
    flushes_.pop_front();
    lock.unlock();
    (*job.job)();
    lock.lock();
    // Only the round's own commit thread waits for it; the other one's
    // spurious wake finds its own round undone and waits again.
    if (--*job.undone == 0) roundDone_.notify_all();
  }
}

}  // namespace webhooker::storage
