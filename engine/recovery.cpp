// Engine: restart recovery, the periodic sweep and lane refills. All read
// the events DBs (the source of truth) and admit what nothing in memory holds.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "base/thread_name.h"
#include "engine/engine.h"

namespace webhooker {

namespace {

constexpr int kSweepPage = 1000;  // rows per read of the events DB

}  // namespace

Engine::ReconcileWindow::ReconcileWindow(Engine& engine) : engine_(engine) {
  MutexLock lock(engine_.engineMutex_);
  started_ = engine_.held_.openReconcile();
}

Engine::ReconcileWindow::~ReconcileWindow() {
  MutexLock lock(engine_.engineMutex_);
  engine_.held_.closeReconcile(started_);
}

void Engine::reconcileRows(const std::string& webhookId,
                           const std::vector<UnfinishedDelivery>& rows, bool scheduleFuture,
                           uint64_t started, Handoffs handoffs) {
  // A pending row read here may be one ingest has committed and not yet
  // handed over: its handoff was opened before the commit, so before this
  // read. Once those handoffs are closed, every such delivery is held (or
  // released after this reconcile began) and is skipped below.
  if (handoffs == Handoffs::kWait) waitForOpenHandoffs();
  std::unordered_set<std::string> fifoDecided;
  for (const UnfinishedDelivery& d : rows)
    reconcileDelivery(webhookId, d, scheduleFuture, started, fifoDecided);
}

void Engine::recover() {
  targetCache_.loadLive();
  auto webhooks = store_.listWebhooks();
  if (!webhooks) {
    spdlog::error("recovery.failed error=\"{}\"", webhooks.error().message);
    return;
  }
  // With many webhooks, opening each file was most of a recovery, and most
  // of an open is setting up the file's shared WAL index: each file is read
  // alone instead (EventsDbPool::unfinishedIfClosed), without one, and left
  // closed; a webhook with work due now is opened by the worker that takes
  // it. Those reads run on every core, at most kReadAhead webhooks ahead of
  // this thread, which reconciles them one at a time, in order. A read
  // ahead gives up on a webhook with more than kMostRowsAhead waiting, which
  // this thread then reads itself: rows read ahead wait in memory, and a few
  // big webhooks read at once would hold most of their backlog there.
  // Nothing is released before the workers start, but one window covers
  // every read all the same.
  constexpr size_t kReadAhead = 8;
  constexpr int kMostRowsAhead = 2000;
  const size_t count = webhooks->size();
  const TimePoint now = clock_.now();
  std::vector<std::optional<EventsDbPool::ClosedFileRead>> reads(count);
  std::vector<std::atomic<bool>> readDone(count);
  std::atomic<size_t> reconciled{0};
  std::atomic<size_t> nextToRead{0};
  const ReconcileWindow window(*this);
  const auto readAhead = [&] {
    nameThisThread("wh-recovery");
    for (size_t i; (i = nextToRead.fetch_add(1)) < count;) {
      for (size_t done = reconciled.load(); i >= done + kReadAhead; done = reconciled.load())
        reconciled.wait(done);
      reads[i] = eventsDbs_.unfinishedIfClosed((*webhooks)[i].id, now, kMostRowsAhead);
      readDone[i].store(true);
      readDone[i].notify_one();
    }
  };
  {
    std::vector<std::jthread> readers;
    const size_t cores = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
    for (size_t t = 0; t < cores; ++t) readers.emplace_back(readAhead);
    for (size_t i = 0; i < count; ++i) {
      readDone[i].wait(false);
      const std::string& id = (*webhooks)[i].id;
      if (!reads[i]) reads[i] = eventsDbs_.unfinishedIfClosed(id, now);
      if (reads[i]) {
        reconcileRows(id, reads[i]->file.rows, true, window.started(), Handoffs::kWait);
        if (recoveredBacklog_)
          recoveredBacklog_(id, reads[i]->closings, std::move(reads[i]->file.backlog));
      } else {
        reconcileWebhook(id, nullptr, true);  // through the pool: not readable alone
      }
      reads[i].reset();
      reconciled.store(i + 1);
      reconciled.notify_all();
      // If the pool opened it after all, let go of it: SQLite's open walks
      // every file the process holds.
      eventsDbs_.letGo(id);
    }
  }
  spdlog::info("recovery.done webhooks={} held={}", count, heldCount());
}

void Engine::reconcileWebhook(const std::string& webhookId, const std::string* onlyTarget,
                              bool scheduleFuture) {
  const ReconcileWindow window(*this);
  const uint64_t started = window.started();
  auto db = eventsDbs_.getIfMade(webhookId);
  if (!db) {
    spdlog::error("recovery.events_db_unavailable webhook_id={} error=\"{}\"", webhookId,
                  db.error().message);
    return;
  }
  if (!db.value()) return;                      // no events file yet: nothing waits
  std::unordered_set<std::string> fifoDecided;  // FIFO targets whose head is settled
  if (!onlyTarget && !scheduleFuture) {
    // The sweep: target by target, a page at a time. One read of a whole
    // webhook held its events DB (writes included) for about a second with
    // 220,000 waiting, and every row of it in memory.
    std::string after;
    while (true) {
      auto next = db.value()->nextWaitingTarget(after);
      if (!next) {
        spdlog::error("recovery.scan_failed webhook_id={} error=\"{}\"", webhookId,
                      next.error().message);
        return;
      }
      if (!next.value()) return;
      after = std::move(*next.value());
      // A lane the caps cut off is refilled from the events DB once it
      // drains: its rows are not lost, and admitting them here would take
      // the room the caps leave to other lanes (slow targets' backlog would
      // fill the global cap, and a fast target could not refill).
      if (MutexLock lock(engineMutex_); scheduler_.leaveToRefill(after)) continue;
      if (!reconcilePages(webhookId, *db.value(), after, started, fifoDecided,
                          [](bool) { return std::optional<int>(kSweepPage); }))
        return;
    }
  }
  // A FIFO target's lane wants its oldest waiting delivery only; any other
  // target's refill reads a page at a time, no more than its lane has room
  // for (its queued and in-flight ones come first in the order and are
  // skipped), so refilling a lane the caps cut off costs what it brings in.
  // A changed target's read takes its retries into the timer: all of it.
  const TargetPtr only = onlyTarget ? targetCache_.get(webhookId, *onlyTarget) : nullptr;
  const bool fifoOnly = only && only->fifo();
  if (onlyTarget && !fifoOnly && !scheduleFuture) {
    reconcilePages(webhookId, *db.value(), *onlyTarget, started, fifoDecided,
                   [&](bool firstPage) {
                     MutexLock lock(engineMutex_);
                     return scheduler_.refillPage(webhookId, *onlyTarget, firstPage);
                   });
    return;
  }
  auto unfinished =
      db.value()->unfinishedDeliveries(onlyTarget, fifoOnly ? std::optional(1) : std::nullopt);
  if (!unfinished) {
    spdlog::error("recovery.scan_failed webhook_id={} error=\"{}\"", webhookId,
                  unfinished.error().message);
    return;
  }
  // Ingest never admits a FIFO target's delivery itself, so a read of that
  // target alone need not wait for its handoffs.
  reconcileRows(webhookId, unfinished.value(), scheduleFuture, started,
                fifoOnly ? Handoffs::kNone : Handoffs::kWait);
}

bool Engine::reconcilePages(const std::string& webhookId, EventsDb& db,
                            const std::string& targetId, uint64_t started,
                            std::unordered_set<std::string>& fifoDecided,
                            const std::function<std::optional<int>(bool firstPage)>& pageSize) {
  DeliveryPosition cursor;
  for (bool firstPage = true;; firstPage = false) {
    const std::optional<int> limit = pageSize(firstPage);
    if (!limit) return true;
    auto page = db.unfinishedDeliveries(&targetId, limit, &cursor);
    if (!page) {
      spdlog::error("recovery.scan_failed webhook_id={} error=\"{}\"", webhookId,
                    page.error().message);
      return false;
    }
    waitForOpenHandoffs();  // as for a whole read, below
    const bool lastPage = page->size() < static_cast<size_t>(*limit);
    // A FIFO target's held head must stay (it settles the rest of the page),
    // and a deleted target's rows all end, held or not.
    if (const TargetPtr target = targetCache_.get(webhookId, targetId);
        target && !target->deletedAt && !target->fifo())
      dropHeld(page.value());
    for (const UnfinishedDelivery& d : page.value()) {
      reconcileDelivery(webhookId, d, false, started, fifoDecided);
      if (fifoDecided.count(targetId)) return true;  // the rest wait behind the head
    }
    if (lastPage) return true;
  }
}

void Engine::dropHeld(std::vector<UnfinishedDelivery>& rows) {
  MutexLock lock(engineMutex_);
  std::erase_if(rows, [this](const UnfinishedDelivery& d) REQUIRES(engineMutex_) {
    return held_.holds(d.id);
  });
}

void Engine::reconcileDelivery(const std::string& webhookId, const UnfinishedDelivery& d,
                               bool scheduleFuture, uint64_t started,
                               std::unordered_set<std::string>& fifoDecided) {
  TargetPtr target = targetCache_.get(webhookId, d.targetId);
  if (!target || target->deletedAt) {
    // The target is gone: end the delivery without touching target data.
    const auto type = target ? std::optional<TargetType>(target->type) : std::nullopt;
    auto db = eventsDbs_.get(webhookId);
    if (!db) {
      spdlog::error("recovery.events_db_unavailable webhook_id={} error=\"{}\"", webhookId,
                    db.error().message);
      return;
    }
    if (auto r = db.value()->failWithoutAttempt(d.id, FailureKind::kTargetDeleted); r) {
      observer_.outcome(type, DeliveryStatus::kFailed, FailureKind::kTargetDeleted);
      spdlog::warn("delivery.dead_lettered webhook_id={} delivery_id={} target_id={} "
                   "reason=target_deleted",
                   webhookId, d.id, d.targetId);
    }
    return;
  }
  if (!target->deliverable()) return;  // paused or disabled until enabled
  if (target->fifo() && fifoDecided.count(d.targetId)) return;  // behind the head

  Task task = nextAttempt(webhookId, d, target->type);

  std::chrono::milliseconds wait{0};
  if (d.status == DeliveryStatus::kRetrying) {
    if (Rescheduler* r = targets_.rescheduler(target->type))
      wait = r->remainingBackoff(*target, d.lastAttemptAt, d.attempts - d.seriesStart);
  }
  if (d.nextAttemptAt) {
    // The stored time may be later still: a receiver's Retry-After, or an
    // open breaker's cooldown (also for a pending delivery it deferred).
    wait = std::max(wait, std::chrono::duration_cast<std::chrono::milliseconds>(
                              *d.nextAttemptAt - clock_.now()));
  }
  if (target->fifo()) {
    // The oldest waiting delivery is the head, however long it waits;
    // one that ended since the read lets the next be considered.
    if (admitFifoHead(std::move(task), std::max(wait, std::chrono::milliseconds(0)), started) !=
        HeadAdmission::kReleasedSinceRead)
      fifoDecided.insert(d.targetId);
  } else if (wait.count() == 0) {
    admit(std::move(task), started);
  } else if (scheduleFuture) {
    MutexLock lock(engineMutex_);
    if (scheduler_.stopping() || !held_.hold(task.deliveryId, started)) return;
    if (auto left = timer_.schedule(std::move(task), wait)) letGoOfRetryLocked(*left);
  }
}

void Engine::sweep() {
  auto webhooks = store_.listWebhooks();
  if (!webhooks) {
    spdlog::error("sweep.failed error=\"{}\"", webhooks.error().message);
    return;
  }
  const auto started = std::chrono::steady_clock::now();
  size_t reconciled = 0;
  for (const Webhook& w : webhooks.value()) {
    if (!maySweep(w.id)) continue;
    reconcileWebhook(w.id, nullptr, false);
    ++reconciled;
  }
  spdlog::info("sweep.pass webhooks={} reconciled={} duration_ms={}", webhooks.value().size(),
               reconciled,
               std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count());
}

bool Engine::maySweep(const std::string& webhookId) {
  // Opening every webhook's DB each minute kept each open (about 150 KB
  // apiece) and pushed the busy ones out of the pool. A larger backlog is
  // read through the pool a page at a time, as before: ingest to the
  // webhook waits for the read alone, and should wait no longer than for a page.
  const auto waiting = eventsDbs_.waitingTargetsIfClosed(webhookId, kSweepPage);
  if (!waiting) return true;
  return std::ranges::any_of(*waiting, [&](const EventsDb::WaitingTarget& t) {
    if (t.anyDue) return true;
    const TargetPtr target = targetCache_.get(webhookId, t.targetId);
    return !target || target->deletedAt || target->fifo();
  });
}

void Engine::sweepLoop(std::stop_token stop) {
  nameThisThread("wh-sweep");
  Mutex sleepMutex;  // guards nothing: the sleep waits for a stop only
  std::condition_variable_any sleeper;
  while (!stop.stop_requested()) {
    {
      MutexLock lock(sleepMutex);
      sleeper.wait_for(lock, stop, options_.sweepInterval, [] { return false; });
    }
    if (stop.stop_requested()) return;
    sweep();
  }
}

void Engine::refillLoop(std::stop_token stop) {
  nameThisThread("wh-refill");
  MutexLock lock(engineMutex_);
  while (true) {
    refillWanted_.wait(lock, stop, [&]() REQUIRES(engineMutex_) {
      return scheduler_.stopping() || scheduler_.hasRefill();
    });
    if (scheduler_.stopping() || stop.stop_requested()) return;
    const Refill refill = *scheduler_.takeRefill();
    lock.unlock();
    // A target's refill takes only deliveries due now; those still waiting
    // are the timer's or the sweep's. A webhook's takes its retries back.
    const std::string* target = refill.targetId ? &*refill.targetId : nullptr;
    reconcileWebhook(refill.webhookId, target, !target);
    lock.lock();
  }
}

}  // namespace webhooker
