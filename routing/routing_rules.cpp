#include "routing/routing_rules.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>

#include "base/ascii_case.h"
#include "base/form_encoding.h"
#include "base/json_member.h"
#include "base/json_pointer.h"
#include "base/json_text.h"
#include "base/utf8.h"

namespace webhooker {

namespace {

using nlohmann::json;

bool isHeaderName(std::string_view name) {
  static constexpr std::string_view kTokenPunctuation = "!#$%&'*+-.^_`|~";
  return !name.empty() && name.size() <= 256 &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) ||
                  kTokenPunctuation.find(c) != std::string_view::npos;
         });
}

std::optional<std::string> usable(std::optional<std::string> type) {
  if (type && isEventTypeValue(*type)) return type;
  return std::nullopt;
}

std::optional<std::string> headerValue(const HeaderList& headers, std::string_view name) {
  for (const auto& [n, v] : headers)
    if (equalsIgnoringCase(n, name)) return v;
  return std::nullopt;
}

std::optional<std::string> typeAtPointer(std::string_view body, const std::string& pointerText) {
  const auto pointer = parseJsonPointer(pointerText);
  if (!pointer) return std::nullopt;
  const auto doc = parseJsonText(body);
  if (doc.is_discarded()) return std::nullopt;
  const nlohmann::ordered_json* at = &doc;
  for (const std::string& token : *pointer) {
    if (at->is_object()) {
      const auto it = at->find(token);
      if (it == at->end()) return std::nullopt;
      at = &*it;
    } else if (at->is_array()) {
      if (token.empty() || token.size() > 9 ||
          !std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
          (token.size() > 1 && token[0] == '0'))
        return std::nullopt;
      const size_t index = std::stoul(token);
      if (index >= at->size()) return std::nullopt;
      at = &(*at)[index];
    } else {
      return std::nullopt;
    }
  }
  if (!at->is_string()) return std::nullopt;
  return at->get<std::string>();
}

Error invalid(std::string_view code, std::string message) {
  return makeError(code, std::move(message));
}

// A jq program field: a non-empty string of at most kMaxProgramLength.
Result<std::string> programField(const json& value, std::string_view code, const std::string& name) {
  if (!value.is_string() || value.get<std::string>().empty())
    return invalid(code, name + " must be a non-empty jq program");
  std::string program = value.get<std::string>();
  if (program.size() > kMaxProgramLength || program.find('\0') != std::string::npos ||
      !isValidUtf8(program))
    return invalid(code, name + " must be valid UTF-8 of at most " +
                             std::to_string(kMaxProgramLength) + " bytes");
  return program;
}

Result<void> applyFilter(const json& filter, TargetRouting& out) {
  constexpr std::string_view kCode = error_code::kInvalidFilter;
  out.eventTypes.clear();
  out.filterJq.clear();
  if (filter.is_null()) return {};
  if (!filter.is_object())
    return invalid(kCode, "filter must be an object with event_types and/or jq");
  for (const auto& [name, value] : filter.items())
    if (name != "event_types" && name != "jq")
      return invalid(kCode, "filter." + name + " is not a known field (event_types, jq)");
  if (filter.contains("event_types") && !filter["event_types"].is_null()) {
    const json& types = filter["event_types"];
    if (!types.is_array() || types.size() > kMaxEventTypePatterns)
      return invalid(kCode, "filter.event_types must be an array of at most " +
                                std::to_string(kMaxEventTypePatterns) + " patterns");
    for (const json& t : types) {
      if (!t.is_string() || !isEventTypePattern(t.get<std::string>()))
        return invalid(kCode, "filter.event_types: " + t.dump(-1, ' ', false, json::error_handler_t::replace) +
                                  " is not an event type, \"prefix.*\" or \"*\"");
      out.eventTypes.push_back(t.get<std::string>());
    }
  }
  if (filter.contains("jq") && !filter["jq"].is_null()) {
    auto program = programField(filter["jq"], kCode, "filter.jq");
    if (!program) return program.error();
    out.filterJq = std::move(program.value());
  }
  return {};
}

Result<void> applyTransform(const json& transform, TargetRouting& out) {
  constexpr std::string_view kCode = error_code::kInvalidTransform;
  out.transformJq.clear();
  if (transform.is_null()) return {};
  if (!transform.is_object() || transform.size() != 1 || !transform.contains("jq"))
    return invalid(kCode, "transform must be {\"jq\": \"<program>\"} or null");
  auto program = programField(transform["jq"], kCode, "transform.jq");
  if (!program) return program.error();
  out.transformJq = std::move(program.value());
  return {};
}

Result<void> applyRateLimit(const json& limit, TargetRouting& out) {
  out.ratePerSecond.reset();
  if (limit.is_null()) return {};
  if (!limit.is_object() || limit.size() != 1 || !limit.contains("per_second") ||
      !limit["per_second"].is_number())
    return invalid("invalid_rate_limit", "rate_limit must be {\"per_second\": N} or null");
  const double rate = limit["per_second"].get<double>();
  if (!std::isfinite(rate) || rate < kMinRatePerSecond || rate > kMaxRatePerSecond)
    return invalid("invalid_rate_limit", "rate_limit.per_second must be from 0.01 to 10000");
  out.ratePerSecond = rate;
  return {};
}

}  // namespace

Result<EventTypeRule> parseEventTypeRule(const json& value) {
  constexpr std::string_view kCode = error_code::kInvalidEventType;
  if (value.is_null()) return EventTypeRule{};
  if (!value.is_object() || value.size() != 1)
    return invalid(kCode,
                   "event_type must be one of {\"header\": name}, {\"json_pointer\": pointer}, "
                   "{\"jq\": program} or null");
  const auto only = value.begin();  // the object's one member
  const std::string& name = only.key();
  const json& field = only.value();
  if (name == "header") {
    if (!field.is_string() || !isHeaderName(field.get<std::string>()))
      return invalid(kCode, "event_type.header must be a header name");
    return EventTypeRule{EventTypeSource::kHeader, field.get<std::string>()};
  }
  if (name == "json_pointer") {
    if (!field.is_string() || field.get<std::string>().size() > 1024 ||
        !parseJsonPointer(field.get<std::string>()))
      return invalid(kCode, "event_type.json_pointer must be a JSON pointer such as \"/type\"");
    return EventTypeRule{EventTypeSource::kJsonPointer, field.get<std::string>()};
  }
  if (name == "jq") {
    auto program = programField(field, kCode, "event_type.jq");
    if (!program) return program.error();
    return EventTypeRule{EventTypeSource::kJq, std::move(program.value())};
  }
  return invalid(kCode, "event_type." + name + " is not a known rule (header, json_pointer, jq)");
}

EventTypeRule storedEventTypeRule(const std::string& text) {
  if (text.empty()) return {};
  auto rule = parseEventTypeRule(json::parse(text, nullptr, false));
  return rule ? rule.value() : EventTypeRule{};
}

json eventTypeRuleJson(const EventTypeRule& rule) {
  switch (rule.source) {
    case EventTypeSource::kDefault: return nullptr;
    case EventTypeSource::kHeader: return {{"header", rule.expression}};
    case EventTypeSource::kJsonPointer: return {{"json_pointer", rule.expression}};
    case EventTypeSource::kJq: return {{"jq", rule.expression}};
  }
  return nullptr;
}

std::string eventTypeRuleText(const EventTypeRule& rule) {
  return rule.source == EventTypeSource::kDefault ? "" : eventTypeRuleJson(rule).dump();
}

std::optional<std::string> formBodyJson(const HeaderList& headers, std::string_view body) {
  if (isJsonText(body)) return std::nullopt;
  const auto contentType = headerValue(headers, "Content-Type");
  if (!contentType || !isFormContentType(*contentType)) return std::nullopt;
  return formFieldsJson(body);
}

std::optional<std::string> eventTypeWithoutJq(const EventTypeRule& rule, const HeaderList& headers,
                                              std::string_view body) {
  if (rule.source == EventTypeSource::kJsonPointer || rule.source == EventTypeSource::kDefault) {
    if (const auto form = formBodyJson(headers, body)) {
      if (rule.source == EventTypeSource::kJsonPointer)
        return usable(typeAtPointer(*form, rule.expression));
      if (auto github = usable(headerValue(headers, "X-GitHub-Event"))) return github;
      return usable(topLevelStringMember(*form, "type"));
    }
  }
  switch (rule.source) {
    case EventTypeSource::kHeader: return usable(headerValue(headers, rule.expression));
    case EventTypeSource::kJsonPointer: return usable(typeAtPointer(body, rule.expression));
    case EventTypeSource::kJq: return std::nullopt;
    case EventTypeSource::kDefault: break;
  }
  if (auto github = usable(headerValue(headers, "X-GitHub-Event"))) return github;
  if (body.empty() || std::memchr(body.data(), '\0', body.size()) != nullptr) return std::nullopt;
  return usable(topLevelStringMember(body, "type"));
}

bool isEventTypeValue(std::string_view type) {
  return !type.empty() && type.size() <= kMaxEventTypeLength && isValidUtf8(type) &&
         std::none_of(type.begin(), type.end(), [](char c) {
           return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
         });
}

bool isEventTypePattern(std::string_view pattern) {
  if (pattern == "*") return true;
  if (pattern.ends_with(".*")) pattern.remove_suffix(2);
  return isEventTypeValue(pattern) && pattern.find('*') == std::string_view::npos;
}

bool eventTypeMatches(std::string_view pattern, const std::optional<std::string>& type) {
  if (pattern == "*") return true;
  if (!type) return false;
  if (pattern.ends_with(".*"))
    return type->size() > pattern.size() - 1 &&
           std::string_view(*type).starts_with(pattern.substr(0, pattern.size() - 1));
  return *type == pattern;
}

bool eventTypesMatch(const TargetRouting& routing, const std::optional<std::string>& type) {
  return routing.eventTypes.empty() ||
         std::any_of(routing.eventTypes.begin(), routing.eventTypes.end(),
                     [&](const std::string& p) { return eventTypeMatches(p, type); });
}

Result<TargetRouting> applyTargetRouting(const json& body, TargetRouting base) {
  if (body.contains("filter"))
    if (auto r = applyFilter(body["filter"], base); !r) return r.error();
  if (body.contains("transform"))
    if (auto r = applyTransform(body["transform"], base); !r) return r.error();
  if (body.contains("rate_limit"))
    if (auto r = applyRateLimit(body["rate_limit"], base); !r) return r.error();
  return base;
}

TargetRouting storedTargetRouting(const std::string& text) {
  auto routing = applyTargetRouting(json::parse(text, nullptr, false), {});
  return routing ? routing.value() : TargetRouting{};
}

json targetRoutingJson(const TargetRouting& routing) {
  json filter = nullptr;
  if (routing.hasFilter()) {
    filter = json::object();
    if (!routing.eventTypes.empty()) filter["event_types"] = routing.eventTypes;
    if (!routing.filterJq.empty()) filter["jq"] = routing.filterJq;
  }
  json transform = nullptr;
  if (!routing.transformJq.empty()) transform = {{"jq", routing.transformJq}};
  json rateLimit = nullptr;
  if (routing.ratePerSecond) rateLimit = {{"per_second", *routing.ratePerSecond}};
  return {{"filter", filter}, {"transform", transform}, {"rate_limit", rateLimit}};
}

std::string targetRoutingText(const TargetRouting& routing) {
  return targetRoutingJson(routing).dump();
}

std::string jqInput(const std::optional<std::string>& eventType, const HeaderList& headers,
                    std::string_view body, std::string_view receivedAt) {
  std::map<std::string, std::string> merged;
  for (const auto& [name, value] : headers) {
    auto [it, fresh] = merged.try_emplace(asciiLower(name), value);
    if (!fresh) it->second += ", " + value;
  }
  json fields = {{"event_type", eventType ? json(*eventType) : json(nullptr)},
                 {"headers", merged},
                 {"received_at", receivedAt}};
  std::string head = fields.dump(-1, ' ', false, json::error_handler_t::replace);
  // The body goes in as sent: a JSON body is already the text jq parses.
  // All but a leading byte order mark, which the parser skips (RFC 8259
  // allows it) and which inside this object would not be JSON.
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);
  head.pop_back();  // the closing brace
  head += ",\"body\":";
  if (isJsonText(body)) {
    head += body;
  } else if (const auto form = formBodyJson(headers, body)) {
    head += *form;
  } else {
    head += "null";
  }
  head += '}';
  return head;
}

}  // namespace webhooker
