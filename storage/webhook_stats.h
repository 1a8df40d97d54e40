// WebhookStats: the counts EventsDb::stats() reads for the admin API and the
// console. Plain values; times are the stored ISO-8601 text.
#pragma once

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

struct TargetActivity {
  std::string targetId;
  DeliveryCounts deliveries;
  std::optional<LastFailure> lastFailure;
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
