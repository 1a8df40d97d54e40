// Reading the history and redrive endpoints' inputs: query parameters,
// time ranges, page cursors and the targets a request names. Every reader
// refuses bad input with a 4xx-mapped error before anything is read or
// written, so a refused request changes nothing.
#pragma once

#include "server/http_message.h"

#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "storage/events_db.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"

namespace webhooker::server {

// The query parameters by name: "unknown_parameter" for a name not in
// `allowed`, "invalid_parameter" for one given twice.
Result<std::map<std::string, std::string>> queryParams(
    const HttpRequest& req, std::initializer_list<std::string_view> allowed);

// The value of parameter `name`, if given.
std::optional<std::string> queryParam(const std::map<std::string, std::string>& params,
                                      const char* name);

// Sets filter.since/until (stored time format) from what the caller typed:
// "invalid_field" for a time parseTime() refuses, "invalid_time_range" when
// since is later than until.
Result<void> readTimeRange(const std::optional<std::string>& since,
                           const std::optional<std::string>& until, HistoryFilter& filter);

// Sets filter.eventType: an event type or "prefix.*"; "invalid_field"
// otherwise. Nothing for nullopt.
Result<void> readEventType(const std::optional<std::string>& eventType, HistoryFilter& filter);

// The target of `webhookId` that request field `field` names (soft-deleted
// ones too; callers decide what those mean): "invalid_field" unless a uuid,
// "unknown_target" unless it is one of this webhook's.
Result<TargetRecord> namedTarget(MainStore& store, const std::string& webhookId,
                                 const std::string& raw, const char* field);

// A listing's page: ?limit= from 1 to kMaxPageLimit (kDefaultPageLimit when
// absent; "invalid_field" otherwise) and ?cursor=, one of `cursorKind`
// (decodeCursor's errors), the rows after it.
constexpr int kDefaultPageLimit = 50;
constexpr int kMaxPageLimit = 500;
struct PageRequest {
  int limit = kDefaultPageLimit;
  std::optional<PageKey> after;
};
Result<PageRequest> readPage(const std::map<std::string, std::string>& params,
                             std::string_view cursorKind);

// Page cursors are opaque to callers: URL-safe base64 of the listing's kind
// and the sort key of the last row shown. A cursor of another kind, or one
// that does not decode, is "invalid_cursor".
std::string encodeCursor(std::string_view kind, const PageKey& key);
Result<PageKey> decodeCursor(std::string_view kind, std::string_view cursor);

// The events DB of an existing webhook: "not_found" for an unknown webhook;
// null, and no file made, for one with no file yet (EventsDbPool::getIfMade):
// it has had no event, so nothing of it to read, lease or settle.
Result<std::shared_ptr<EventsDb>> webhookEventsDb(MainStore& store, EventsDbPool& eventsDbs,
                                                  const std::string& webhookId);

}  // namespace webhooker::server
