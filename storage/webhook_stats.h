// WebhookStats: the counts EventsDb::stats() reads for the admin API and the
// console. Plain values; times are the stored ISO-8601 text.
#pragma once

#include "storage/delivery_status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace webhooker {

struct DeliveryCounts {
  int64_t pending = 0;
  int64_t retrying = 0;
  int64_t delivered = 0;
  int64_t failed = 0;
};

// The latest failed attempt to a target.
struct LastFailure {
  std::string deliveryId;
  std::string eventId;
  std::string at;
  std::optional<int> statusCode;
  std::optional<std::string> error;
};

// A target's oldest waiting delivery: for a FIFO target the one its lane
// holds, which the others wait behind.
struct OldestWaiting {
  std::string deliveryId;
  std::string eventId;
  DeliveryStatus status = DeliveryStatus::kPending;
  int attempts = 0;
  std::optional<std::string> nextAttemptAt;
};

struct TargetActivity {
  std::string targetId;
  DeliveryCounts deliveries;
  std::optional<LastFailure> lastFailure;
  std::optional<OldestWaiting> oldestWaiting;
  // How long the oldest delivery that is due (no next attempt time, or one
  // that has passed) and not delivered has waited since it was created.
  std::optional<double> oldestDueAgeSeconds;
};

// One hour of the activity chart: events received in it, and deliveries that
// are failed and failed in it (a redriven one leaves its hour).
struct HourlyCount {
  std::string hour;  // the hour's start, stored time format
  int64_t received = 0;
  int64_t failed = 0;
};

struct WebhookStats {
  int64_t events = 0;
  DeliveryCounts deliveries;
  std::vector<TargetActivity> targets;  // every target id with deliveries, by id
  std::vector<HourlyCount> hours;       // oldest first, the current hour last
};

}  // namespace webhooker
