#include "server/history_params.h"

#include "routing/routing_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "base/secret.h"
#include "base/time_format.h"
#include "base/uuid.h"

namespace webhooker::server {

namespace {

// Accepted time forms, for error messages.
constexpr const char* kTimeForms =
    "an ISO-8601 time such as 2026-11-29T17:48:05Z, 2026-11-29T17:48:05.123+01:00 or 2026-11-29";

Result<std::optional<std::string>> timeBound(const std::optional<std::string>& text,
                                             const char* name) {
  if (!text) return std::optional<std::string>();
  const auto parsed = parseTime(*text);
  if (!parsed)
    return makeError(error_code::kInvalidField, fmt::format("{} must be {}", name, kTimeForms));
  return std::optional<std::string>(formatTime(*parsed));
}

}  // namespace

Result<std::map<std::string, std::string>> queryParams(
    const HttpRequest& req, std::initializer_list<std::string_view> allowed) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : req.params) {
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
      return makeError(error_code::kUnknownParameter,
                       fmt::format("{} is not a known parameter", name));
    if (!out.emplace(name, value).second)
      return makeError(error_code::kInvalidParameter,
                       fmt::format("{} is given more than once", name));
  }
  return out;
}

std::optional<std::string> queryParam(const std::map<std::string, std::string>& params,
                                      const char* name) {
  const auto it = params.find(name);
  if (it == params.end()) return std::nullopt;
  return it->second;
}

Result<void> readEventType(const std::optional<std::string>& eventType, HistoryFilter& filter) {
  if (!eventType) return {};
  if (*eventType == "*" || !isEventTypePattern(*eventType))
    return makeError(error_code::kInvalidField,
                     "event_type must be an event type or \"prefix.*\" (at most 255 bytes)");
  filter.eventType = *eventType;
  return {};
}

Result<void> readTimeRange(const std::optional<std::string>& since,
                           const std::optional<std::string>& until, HistoryFilter& filter) {
  auto from = timeBound(since, "since");
  if (!from) return from.error();
  auto to = timeBound(until, "until");
  if (!to) return to.error();
  // The stored form sorts like the time it names.
  if (from.value() && to.value() && *from.value() > *to.value())
    return makeError(error_code::kInvalidTimeRange, "since must not be later than until");
  filter.since = from.value();
  filter.until = to.value();
  return {};
}

Result<TargetRecord> namedTarget(MainStore& store, const std::string& webhookId,
                                 const std::string& raw, const char* field) {
  if (!isUuid(raw))
    return makeError(error_code::kInvalidField, fmt::format("{} must be a target id", field));
  auto target = store.getTarget(webhookId, normalizeUuid(raw));
  if (!target && target.error().isNotFound())
    return makeError(error_code::kUnknownTarget,
                     fmt::format("{} {} is not a target of this webhook", field, raw));
  return target;
}

Result<PageRequest> readPage(const std::map<std::string, std::string>& params,
                             std::string_view cursorKind) {
  PageRequest page;
  if (const auto limit = queryParam(params, "limit")) {
    const char* end = limit->data() + limit->size();
    const auto [ptr, ec] = std::from_chars(limit->data(), end, page.limit);
    if (ec != std::errc() || ptr != end || page.limit < 1 || page.limit > kMaxPageLimit)
      return makeError(error_code::kInvalidField,
                       fmt::format("limit must be an integer from 1 to {}", kMaxPageLimit));
  }
  if (const auto cursor = queryParam(params, "cursor")) {
    auto key = decodeCursor(cursorKind, *cursor);
    if (!key) return key.error();
    page.after = key.value();
  }
  return page;
}

std::string encodeCursor(std::string_view kind, const PageKey& key) {
  std::string text = base64Encode(fmt::format("{}|{}|{}", kind, key.time, key.id));
  // URL-safe, so it survives a query string unescaped.
  std::replace(text.begin(), text.end(), '+', '-');
  std::replace(text.begin(), text.end(), '/', '_');
  text.erase(text.find_last_not_of('=') + 1);
  return text;
}

Result<PageKey> decodeCursor(std::string_view kind, std::string_view cursor) {
  const Error invalid =
      makeError(error_code::kInvalidCursor, "cursor is not one this listing gave out");
  std::string text(cursor);
  std::replace(text.begin(), text.end(), '-', '+');
  std::replace(text.begin(), text.end(), '_', '/');
  text.append((4 - text.size() % 4) % 4, '=');
  const auto decoded = base64Decode(text);
  if (!decoded) return invalid;
  const size_t first = decoded->find('|');
  const size_t second = first == std::string::npos ? first : decoded->find('|', first + 1);
  if (second == std::string::npos || decoded->substr(0, first) != kind) return invalid;
  PageKey key{decoded->substr(first + 1, second - first - 1), decoded->substr(second + 1)};
  // Only what a listing could have produced: a stored time and an id.
  const auto time = parseTime(key.time);
  if (!time || formatTime(*time) != key.time || !isUuid(key.id)) return invalid;
  return key;
}

Result<std::shared_ptr<EventsDb>> webhookEventsDb(MainStore& store, EventsDbPool& eventsDbs,
                                                  const std::string& webhookId) {
  if (auto w = store.getWebhook(webhookId); !w) return w.error();
  return eventsDbs.getIfMade(webhookId);
}

}  // namespace webhooker::server
