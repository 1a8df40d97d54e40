// A delivery's progress as the attempts write it (AttemptRecord) and as
// recovery, the sweep and redrive read it back (UnfinishedDelivery). Plain
// values; times as TimePoint, converted to stored text inside EventsDb.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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

}  // namespace webhooker
