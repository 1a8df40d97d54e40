// RoutingEvaluator: the routing rules (routing_rules.h) applied to one event,
// jq programs run in the JqSandbox. What ingest asks (the event's type,
// which targets match), what an attempt asks (the body to send), what the
// admin API asks (does a program compile, what would this target do with
// this event). Each call is bounded by the sandbox's budget.
//
// Ownership: the sandbox must outlive it. Threading: any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "storage/event_payload.h"
#include "targets/jq_sandbox.h"
#include "targets/routing_rules.h"

namespace webhooker {

// The transformation's outcome for one attempt.
struct TransformedBody {
  std::string body;  // compact JSON text
};

class RoutingEvaluator {
 public:
  explicit RoutingEvaluator(JqSandbox& sandbox) : sandbox_(sandbox) {}

  // Compiles the rule's or the routing's programs; the error carries jq's
  // message under "invalid_event_type", "invalid_filter" or
  // "invalid_transform" (a timeout is reported under the same code).
  Result<void> check(const EventTypeRule& rule);
  Result<void> check(const TargetRouting& routing);

  // The event's type by `rule` (nullopt: none; a failing jq rule is logged
  // and gives none).
  std::optional<std::string> eventType(const EventTypeRule& rule, const HeaderList& headers,
                                       const std::string& body, const std::string& receivedAt);

  // Whether the jq filter `program` lets the event whose jqInput() is
  // `input` through: its first output is neither false nor null. Errors
  // ("jq_*" codes) count as no match for the caller.
  Result<bool> passes(const std::string& program, const std::string& input);

  // The body `routing`'s transform makes of `payload`: exactly one output
  // or an error whose message is jq's (or says none/several).
  Result<TransformedBody> transform(const TargetRouting& routing, const EventPayload& payload);

 private:
  JqSandbox& sandbox_;
};

}  // namespace webhooker
