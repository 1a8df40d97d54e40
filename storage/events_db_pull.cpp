// EventsDb: pull targets — leases, and what a consumer does with what it
// holds. Each call is one group-committed write (storage/group_commit.h), so
// two consumers never lease one delivery (one writer, and the row is read
// and marked in one transaction) and an answered ack is on disk. A work may
// run twice (its group rolled back and run again), so each starts its output
// afresh.
#include <fmt/format.h>

#include <algorithm>

#include "base/time_format.h"
#include "storage/events_db.h"
#include "storage/failure_reason.h"
#include "storage/group_commit.h"
#include "storage/sqlite_database.h"
#include "storage/statement_cache.h"

namespace webhooker {

namespace {

// Waiting, due, and held by no lease that runs past ?2.
constexpr const char* kOffered =
    "(next_attempt_at IS NULL OR next_attempt_at <= ?2) "
    "AND (leased_until IS NULL OR leased_until <= ?2)";

LeasedDelivery leasedRow(SQLite::Statement& q) {
  return {q.getColumn(0).getString(), q.getColumn(1).getString(), q.getColumn(2).getInt() + 1};
}

void answerNotHeld(LeaseAnswer& a) {
  a.code = error_code::kNotLeased;
  a.message = "delivery " + a.id + " is not held by this lease (another lease's, or settled)";
}

}  // namespace

Result<LeaseGrant> EventsDb::lease(const std::string& targetId, int count, bool fifo,
                                   const std::string& leaseHash, std::chrono::seconds leaseFor) {
  const TimePoint nowPoint = clock_.now();
  const std::string now = formatTime(nowPoint);
  LeaseGrant grant{nowPoint + leaseFor, {}};
  const std::string untilText = formatTime(grant.until);
  std::vector<LeasedDelivery>& out = grant.deliveries;
  auto written = writes_->run("lease deliveries", [&](storage::StatementCache& sql) -> Result<void> {
    out.clear();
    if (fifo) {
      // The oldest waiting delivery is the only one offered, and not while
      // it waits for its time or someone holds it.
      auto head = sql.get(fmt::format(
          "SELECT id, event_id, attempts, {} FROM deliveries WHERE target_id = ?1 "
          "AND status IN ('pending', 'retrying') ORDER BY created_at, rowid LIMIT 1",
          kOffered));
      head->bind(1, targetId);
      head->bind(2, now);
      if (head->executeStep() && head->getColumn(3).getInt() != 0) out.push_back(leasedRow(*head));
    } else {
      auto q = sql.get(fmt::format(
          "SELECT id, event_id, attempts FROM deliveries WHERE target_id = ?1 "
          "AND status IN ('pending', 'retrying') AND {} ORDER BY created_at, rowid LIMIT ?3",
          kOffered));
      q->bind(1, targetId);
      q->bind(2, now);
      q->bind(3, count);
      while (q->executeStep()) out.push_back(leasedRow(*q));
    }
    auto mark = sql.get(
        "UPDATE deliveries SET lease_hash = ?, leased_until = ?, updated_at = ? WHERE id = ?");
    for (const LeasedDelivery& d : out) {
      mark->bind(1, leaseHash);
      mark->bind(2, untilText);
      mark->bind(3, now);
      mark->bind(4, d.id);
      mark->exec();
      mark->reset();
    }
    return {};
  });
  if (!written) return written.error();
  return grant;
}

Result<void> EventsDb::releaseLease(const std::string& deliveryId, const std::string& leaseHash) {
  return writes_->run("release lease", [&](storage::StatementCache& sql) -> Result<void> {
    auto release = sql.get(
        "UPDATE deliveries SET lease_hash = NULL, leased_until = NULL WHERE id = ? AND "
        "lease_hash = ?");
    release->bind(1, deliveryId);
    release->bind(2, leaseHash);
    release->exec();
    return {};
  });
}

Result<std::vector<LeaseAnswer>> EventsDb::settleLease(const LeaseSettlement& s) {
  const TimePoint nowPoint = clock_.now();
  const std::string now = formatTime(nowPoint);
  std::vector<LeaseAnswer> answers;
  auto written = writes_->run("settle lease", [&](storage::StatementCache& sql) -> Result<void> {
    answers.clear();
    for (const std::string& id : s.ids) {
      LeaseAnswer& a = answers.emplace_back();
      a.id = id;
      int attempts = 0;
      int seriesStart = 0;
      std::string leasedUntil;
      std::optional<TimePoint> leasedAt;
      {
        auto q = sql.get(
            "SELECT status, attempts, series_start, lease_hash, leased_until, updated_at "
            "FROM deliveries WHERE id = ? AND target_id = ? AND status IN ('pending', 'retrying')");
        q->bind(1, id);
        q->bind(2, s.targetId);
        if (!q->executeStep() || q->getColumn(3).isNull() ||
            q->getColumn(3).getString() != s.leaseHash) {
          answerNotHeld(a);
          continue;
        }
        a.status = storage::statusColumn(q->getColumn(0));
        attempts = q->getColumn(1).getInt();
        seriesStart = q->getColumn(2).getInt();
        leasedUntil = q->getColumn(4).getString();
        leasedAt = parseTime(q->getColumn(5).getString());  // a lease sets updated_at
      }
      if (leasedUntil <= now) {
        a.code = error_code::kLeaseExpired;
        a.message = "the lease on delivery " + id + " ran out at " + leasedUntil +
                    "; it is offered again";
        continue;
      }
      if (s.action == LeaseAction::kExtend) {
        a.at = nowPoint + s.extendBy;
        auto extend = sql.get("UPDATE deliveries SET leased_until = ? WHERE id = ?");
        extend->bind(1, formatTime(*a.at));
        extend->bind(2, id);
        extend->exec();
        continue;
      }
      a.attempt = attempts + 1;
      if (leasedAt)
        a.heldMs = std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                            nowPoint - *leasedAt).count());
      const bool success = s.action == LeaseAction::kAck;
      std::optional<std::string> reason;
      if (success) {
        a.status = DeliveryStatus::kDelivered;
      } else if (const auto delay = s.retryDelay(a.attempt - seriesStart)) {
        a.status = DeliveryStatus::kRetrying;
        a.at = nowPoint + *delay;
      } else {
        a.status = DeliveryStatus::kFailed;
        reason = failureReasonWord(FailureKind::kMaxAttempts);
      }
      auto update = sql.get(
          "UPDATE deliveries SET status = ?, attempts = ?, next_attempt_at = ?, "
          "failure_reason = ?, lease_hash = NULL, leased_until = NULL, updated_at = ? "
          "WHERE id = ?");
      update->bind(1, storage::statusText(a.status));
      update->bind(2, a.attempt);
      if (a.at) update->bind(3, formatTime(*a.at));
      if (reason) update->bind(4, *reason);
      update->bind(5, now);
      update->bind(6, id);
      update->exec();
      auto result = sql.get(
          "INSERT INTO delivery_results (delivery_id, attempt, error, duration_ms, success, "
          "created_at) VALUES (?, ?, ?, ?, ?, ?)");
      result->bind(1, id);
      result->bind(2, a.attempt);
      if (!success) result->bind(3, s.nackError);
      result->bind(4, a.heldMs);
      result->bind(5, success ? 1 : 0);
      result->bind(6, now);
      result->exec();
    }
    return {};
  });
  if (!written) return written.error();
  return answers;
}

std::vector<LeaseAnswer> EventsDb::settleWithoutFile(const LeaseSettlement& s) {
  std::vector<LeaseAnswer> answers(s.ids.size());
  for (size_t i = 0; i < s.ids.size(); ++i) {
    answers[i].id = s.ids[i];
    answerNotHeld(answers[i]);
  }
  return answers;
}

}  // namespace webhooker
