// A delivery's progress as the attempts write it (AttemptRecord) and as
// recovery, the sweep and redrive read it back (UnfinishedDelivery). Plain
// values; times as TimePoint, converted to stored text inside EventsDb.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "storage/delivery_status.h"
#include "storage/failure_reason.h"

namespace webhooker {

// One attempt and the delivery state it leads to, written together.
struct AttemptRecord {
  std::string deliveryId;
  int attempt = 1;
  std::optional<int> statusCode;
  std::string responseBody;  // the caller caps it (4 KiB)
  std::string error;
  int64_t durationMs = 0;
  bool success = false;
  DeliveryStatus newStatus = DeliveryStatus::kDelivered;  // kRetrying, kDelivered or kFailed
  std::optional<TimePoint> nextAttemptAt;
  std::optional<FailureReason> failureReason;
};

// Where a read stands in the oldest-first order of the deliveries table
// (created_at, then rowid); the default one is ahead of every delivery.
struct DeliveryPosition {
  std::string createdAt;  // as stored
  int64_t rowid = 0;
};

// A delivery that is not finished, as recovery and the sweep see it.
struct UnfinishedDelivery {
  std::string id;
  std::string eventId;
  std::string targetId;
  DeliveryStatus status = DeliveryStatus::kPending;  // kPending or kRetrying
  int attempts = 0;
  int seriesStart = 0;  // attempts made before the current series (a redrive)
  std::optional<TimePoint> nextAttemptAt;
  std::optional<TimePoint> lastAttemptAt;  // when its latest result was written (retrying only)
};

// A pull target's delivery handed to a consumer by a lease (EventsDb::lease).
struct LeasedDelivery {
  std::string id;
  std::string eventId;
  int attempt = 1;  // the attempt an ack or a nack of this lease records
};
struct LeaseGrant {
  TimePoint until;  // when the lease runs out
  std::vector<LeasedDelivery> deliveries;
};

// What a consumer does with deliveries it holds (EventsDb::settleLease).
enum class LeaseAction { kAck, kNack, kExtend };
struct LeaseSettlement {
  LeaseAction action = LeaseAction::kAck;
  std::string targetId;
  std::string leaseHash;  // SHA-256 of the token, as stored
  std::vector<std::string> ids;
  std::chrono::seconds extendBy{0};  // kExtend: the lease runs this long from now
  // kNack: how long after now attempt `attemptInSeries` is offered again;
  // nullopt: its retries are used up and it is dead-lettered ("max_attempts").
  std::function<std::optional<std::chrono::milliseconds>(int attemptInSeries)> retryDelay;
  std::string nackError;  // kNack: the attempt's error text
};
// What happened to one id of a settlement: `code` empty when it was done,
// else why nothing was (error_code::kNotLeased, kLeaseExpired).
struct LeaseAnswer {
  std::string id;
  std::string_view code;
  std::string message;
  DeliveryStatus status = DeliveryStatus::kPending;  // its status now
  int attempt = 0;  // the attempt an ack or nack recorded
  int64_t heldMs = 0;  // ack or nack: how long since the lease handed it out
  std::optional<TimePoint> at;  // kNack: offered again from; kExtend: held until
};

}  // namespace webhooker
