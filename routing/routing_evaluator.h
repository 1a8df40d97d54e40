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
#include "routing/jq_sandbox.h"
#include "routing/routing_rules.h"

namespace webhooker {

// The transformation's outcome for one attempt.
struct TransformedBody {
  std::string body;  // compact JSON text
};

// Puts a transform's output in place of `payload`'s body: JSON, and the
// headers that described the body received (Content-Type, -Encoding, -MD5,
// Digest) go.
void applyTransformedBody(EventPayload& payload, std::string body);

class RoutingEvaluator {
 public:
  explicit RoutingEvaluator(JqSandbox& sandbox) : sandbox_(sandbox) {}

  // Compiles the rule's or the routing's programs; the error carries jq's
  // message under "invalid_event_type", "invalid_filter" or
  // "invalid_transform" (a timeout is reported under the same code).
  Result<void> check(const EventTypeRule& rule);
  Result<void> check(const TargetRouting& routing);

  // Programs run for `webhookId`, in its share of the jq workers; an error
  // jq_error::isRetryable() accepts means the program did not run.

  // The event's type by `rule` (nullopt: none; a jq rule that fails is
  // logged and gives none). Errors: only the retryable ones.
  Result<std::optional<std::string>> eventType(const EventTypeRule& rule,
                                               const HeaderList& headers, const std::string& body,
                                               const std::string& receivedAt,
                                               const std::string& webhookId);

  // Whether the jq filter `program` lets the event whose jqInput() is
  // `input` through: its first output is neither false nor null. The
  // program's own errors ("jq_error", "jq_timeout", "jq_memory") count as
  // no match for the caller.
  Result<bool> passes(const std::string& program, const std::string& input,
                      const std::string& webhookId);

  // The body `routing`'s transform makes of `payload`: exactly one output
  // or an error whose message is jq's (or says none/several).
  Result<TransformedBody> transform(const TargetRouting& routing, const EventPayload& payload,
                                    const std::string& webhookId);

 private:
  JqSandbox& sandbox_;
};

}  // namespace webhooker
