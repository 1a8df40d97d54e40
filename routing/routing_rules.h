// Routing rules: how an entrypoint finds an event's type, and what a target
// subscribes to (event types, a jq filter), how it reshapes the body (a jq
// transform) and how fast it may be sent to (a token bucket). Parsed from
// and shown as the admin API's JSON; stored as that JSON in the main DB
// (Entrypoint::eventTypeRule, TargetRecord::routingJson). Pure functions;
// running the jq programs is routing_evaluator.h's.
//
//   entrypoint "event_type": {"header": "X-GitHub-Event"} | {"json_pointer": "/type"}
//                            | {"jq": "<expression giving a string>"} | null (the default)
//   target "filter":    {"event_types": ["push", "pull_request.*"], "jq": "<boolean>"}
//          "transform": {"jq": "<program>"}
//          "rate_limit": {"per_second": N}      0.01 <= N <= 10,000
//
// Errors: "invalid_event_type", "invalid_filter", "invalid_transform",
// "invalid_rate_limit", each naming the field.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "storage/event_payload.h"

namespace webhooker {

inline constexpr size_t kMaxEventTypeLength = 255;
inline constexpr size_t kMaxEventTypePatterns = 100;
inline constexpr size_t kMaxProgramLength = 16 * 1024;
inline constexpr double kMinRatePerSecond = 0.01;
inline constexpr double kMaxRatePerSecond = 10'000;

enum class EventTypeSource { kDefault, kHeader, kJsonPointer, kJq };

struct EventTypeRule {
  EventTypeSource source = EventTypeSource::kDefault;
  std::string expression;  // the header name, the pointer or the jq program
};

// From the API's value (null: the default).
Result<EventTypeRule> parseEventTypeRule(const nlohmann::json& value);
// From what the main DB holds ("" is the default; a value the API could not
// have written reads as the default).
EventTypeRule storedEventTypeRule(const std::string& text);
// The API's value: null for the default. storedText is "" for it.
nlohmann::json eventTypeRuleJson(const EventTypeRule& rule);
std::string eventTypeRuleText(const EventTypeRule& rule);

// The event type found without jq: by header, pointer, or the default
// (X-GitHub-Event, then the JSON body's top-level "type"). nullopt when the
// rule finds no usable value (see isEventTypeValue) or is a jq rule.
std::optional<std::string> eventTypeWithoutJq(const EventTypeRule& rule, const HeaderList& headers,
                                              std::string_view body);

// A usable type: 1 to 255 bytes of valid UTF-8 without control characters.
bool isEventTypeValue(std::string_view type);
// "name" (exact), "prefix.*" (every type starting with "prefix.") or "*".
bool isEventTypePattern(std::string_view pattern);
// An untyped event matches "*" only.
bool eventTypeMatches(std::string_view pattern, const std::optional<std::string>& type);

struct TargetRouting {
  std::vector<std::string> eventTypes;  // patterns; empty: every event
  std::string filterJq;                 // empty: none
  std::string transformJq;              // empty: the body as received
  std::optional<double> ratePerSecond;  // none: as fast as max_concurrency allows

  bool hasFilter() const { return !eventTypes.empty() || !filterJq.empty(); }
  bool operator==(const TargetRouting&) const = default;
};

// Whether the event's type passes `routing`'s event_types (none: all pass).
bool eventTypesMatch(const TargetRouting& routing, const std::optional<std::string>& type);

// Applies the "filter", "transform" and "rate_limit" members present in
// `body` onto `base` (a member set to null removes that part).
Result<TargetRouting> applyTargetRouting(const nlohmann::json& body, TargetRouting base);
TargetRouting storedTargetRouting(const std::string& text);
// {"filter", "transform", "rate_limit"}: the API's view, each null when unset.
nlohmann::json targetRoutingJson(const TargetRouting& routing);
std::string targetRoutingText(const TargetRouting& routing);

// A form body (Content-Type application/x-www-form-urlencoded, and not JSON)
// as JSON text (base/form_encoding.h's formFieldsJson); nullopt otherwise.
std::optional<std::string> formBodyJson(const HeaderList& headers, std::string_view body);

// The input of every routing program, as JSON text:
//   {"event_type", "headers": {lower-case name: value}, "body", "received_at"}
// body is the parsed body, a form body's fields (formBodyJson), or null
// otherwise; a repeated header's
// values are joined with ", ". Never fails, whatever the bytes.
std::string jqInput(const std::optional<std::string>& eventType, const HeaderList& headers,
                    std::string_view body, std::string_view receivedAt);

}  // namespace webhooker
