// What the admin API's history and redrive read from an events DB: events,
// deliveries and attempts as stored rows, pages of them, and the filters
// that select them. Plain values; times are the stored ISO-8601 text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/delivery_records.h"
#include "storage/event_payload.h"

namespace webhooker {

// Where a page of history ends: the sort key (a stored time, an id) of its
// last row. Pages run newest first by (time, id), so a key stays valid
// whatever arrives later.
struct PageKey {
  std::string time;
  std::string id;
};

// Which deliveries (or events with such a delivery) to show or replay.
// Times are in the stored format and select by the event's received_at:
// since <= received_at < until.
struct HistoryFilter {
  std::vector<DeliveryStatus> statuses;  // empty: any
  std::optional<std::string> targetId;
  std::optional<std::string> since;
  std::optional<std::string> until;
  // The event's type: exact, or "prefix.*" for every type that starts with
  // "prefix." (checked by the API: routing_rules.h's isEventTypePattern).
  std::optional<std::string> eventType;
};

// One delivery_results row.
struct AttemptRow {
  int attempt = 0;
  std::optional<int> statusCode;
  std::string responseBody;  // capped at 4 KiB when written
  std::optional<std::string> error;
  int64_t durationMs = 0;
  bool success = false;
  std::string createdAt;
};

// A deliveries row with its latest attempt.
struct DeliveryRecord {
  std::string id;
  std::string eventId;
  std::string targetId;
  DeliveryStatus status = DeliveryStatus::kPending;
  int attempts = 0;
  int seriesStart = 0;
  std::optional<std::string> nextAttemptAt;
  std::optional<int> lastStatusCode;
  std::optional<std::string> failureReason;
  std::string createdAt;
  std::string updatedAt;
  std::string eventReceivedAt;
  std::optional<std::string> eventType;
  std::optional<std::string> lastAttemptAt;
  std::optional<std::string> lastError;
  std::vector<AttemptRow> attemptRows;  // every attempt, oldest first; only in showEvent()
};

// An events row. Headers and body are read only by showEvent().
struct EventRecord {
  std::string id;
  std::string entrypointId;
  std::string method;
  std::string path;
  std::string query;
  std::string contentType;
  int64_t bodySize = 0;
  std::string remoteAddr;
  std::optional<std::string> idempotencyKey;
  std::string receivedAt;
  std::optional<std::string> eventType;
  HeaderList headers;
  std::string body;
  std::vector<DeliveryRecord> deliveries;  // oldest first
};

template <typename T>
struct HistoryPage {
  std::vector<T> items;
  std::optional<PageKey> next;  // set when more rows follow
};

// What a replay acts on: deliveries in `filter`'s statuses (failed, or
// failed and delivered) whose target is one of `targetIds` (the live ones).
struct ReplayRequest {
  HistoryFilter filter;
  std::vector<std::string> targetIds;
  bool dryRun = false;
};

struct ReplayOutcome {
  int64_t count = 0;
  std::vector<UnfinishedDelivery> reset;  // empty on a dry run
};

}  // namespace webhooker
