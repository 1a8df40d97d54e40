// transformBody: an attempt's body through its target's jq transform
// (routing/routing_rules.h), from the stored event at every attempt, so a
// fixed program applies on a retry while the stored event stays as received.
//
// Threading: called on the attempt's worker thread; the evaluator blocks it
// until a jq worker answers.
#pragma once

#include <chrono>

#include "base/clock.h"
#include "engine/routing_metrics.h"
#include "engine/target_cache.h"
#include "storage/event_payload.h"
#include "storage/events_db.h"
#include "routing/routing_evaluator.h"
#include "targets/target.h"
#include "targets/task.h"

namespace webhooker {

// What the engine needs for targets with a transform or a rate limit; both
// must outlive the engine. Without an evaluator, a delivery of a target with
// a transform fails transform_failed.
struct EngineRouting {
  RoutingEvaluator* evaluator = nullptr;
  RoutingMetrics* metrics = nullptr;
};

// Replaces `payload` with the transformed body (JSON; the headers that
// described the old body go). False when the transform failed: the
// delivery is then failed as transform_failed and recorded, with `hold`
// kept until the record is written and `observer` told. Also false when
// the program could not run (jq_error::isRetryable: no jq worker for its
// webhook): the delivery is put off kTransformRetryDelay through
// `scheduler`, at no attempt, as an open breaker does.
inline constexpr std::chrono::seconds kTransformRetryDelay{1};
bool transformBody(const TargetCache::Target& target, const Task& task, EventsDb& db,
                   EventPayload& payload, const AttemptHold& hold, const EngineRouting& routing,
                   AttemptObserver& observer, Scheduler& scheduler, const Clock& clock);

}  // namespace webhooker
