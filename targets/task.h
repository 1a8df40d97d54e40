// Task: one delivery attempt to run, as the engine queues it. Carries what
// the attempt needs so the happy path reads nothing from the events DB; an
// event whose body is over kInlineBodyLimit, and every retry, travel without
// their payload, which is read from the events DB when the attempt runs.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/delivery_records.h"
#include "storage/event_payload.h"
#include "storage/ingest_records.h"
#include "storage/target_type.h"

namespace webhooker {

struct Task {
  static constexpr size_t kInlineBodyLimit = 16 * 1024;

  std::string deliveryId;
  std::string eventId;
  std::string webhookId;
  std::string targetId;
  TargetType targetType = TargetType::kHttp;
  int attempt = 1;  // the attempt number this task will make
  // Attempts made before the current series: a redrive starts a new series
  // with a full retry budget, and the results of the old one stay.
  int seriesStart = 0;
  // Set when the body is at most kInlineBodyLimit; one for all of the
  // event's first attempts (read-only: an attempt takes its own copy).
  std::shared_ptr<const EventPayload> payload;
  // An auto-resume probe: attempted although its target is disabled, past
  // the breaker. Its retries are ordinary tasks again.
  bool probe = false;
  // Waiting only because the target's breaker refused it: a change of the
  // target (its config resets the breaker) lets it go at once.
  bool breakerDeferred = false;

  // The attempt's number within its series (1 for the first attempt).
  int attemptInSeries() const { return attempt - seriesStart; }
};

// The first attempt of each delivery an ingest stored, from the event as it
// came in (consumed into one payload all its tasks share, so an event with
// many targets is not copied per target on the committing thread). A body
// over kInlineBodyLimit is left to be read when the attempt runs.
// `targetType` names each stored target's type.
std::vector<Task> firstAttempts(const std::string& webhookId, InboundEvent event,
                                const IngestOutcome& stored,
                                const std::function<TargetType(const std::string& targetId)>& targetType);

// The next attempt of a delivery read back from its events DB (recovery,
// the sweep, a probe, a redrive): it travels without its payload, which is
// read when the attempt runs.
Task nextAttempt(const std::string& webhookId, const UnfinishedDelivery& d, TargetType targetType);

}  // namespace webhooker
