// Admin API: the delivery history — events with their deliveries, one
// event with every attempt, and deliveries by status (`failed` is the
// dead-letter view) and target. Read-only; pages are newest first and their
// cursors stay valid while new events arrive.
#include "server/admin_api.h"
#include "server/history_params.h"
#include "server/history_views.h"
#include "server/json_io.h"

namespace webhooker::server {

namespace {

using nlohmann::json;

constexpr const char* kEventsCursor = "events";
constexpr const char* kDeliveriesCursor = "deliveries";

struct ListQuery {
  HistoryFilter filter;
  PageRequest page;
};

// ?status=&target_id=&since=&until=&event_type=&limit=&cursor=, as both
// listings take them.
Result<ListQuery> readListQuery(const HttpRequest& req, MainStore& store,
                                const std::string& webhookId, const char* cursorKind) {
  auto params = queryParams(
      req, {"status", "target_id", "since", "until", "limit", "cursor", "event_type"});
  if (!params) return params.error();
  ListQuery query;
  if (const auto status = queryParam(*params, "status")) {
    const auto parsed = parseDeliveryStatus(*status);
    if (!parsed)
      return makeError(error_code::kInvalidField,
                       "status must be one of pending, retrying, delivered, failed");
    query.filter.statuses = {*parsed};
  }
  if (const auto targetId = queryParam(*params, "target_id")) {
    // A deleted target's history is still history.
    auto target = namedTarget(store, webhookId, *targetId, "target_id");
    if (!target) return target.error();
    query.filter.targetId = target->id;
  }
  if (auto r = readTimeRange(queryParam(*params, "since"), queryParam(*params, "until"), query.filter); !r)
    return r.error();
  if (auto r = readEventType(queryParam(*params, "event_type"), query.filter); !r) return r.error();
  auto page = readPage(*params, cursorKind);
  if (!page) return page.error();
  query.page = page.value();
  return query;
}

json nextCursor(const char* kind, const std::optional<PageKey>& next) {
  return next ? json(encodeCursor(kind, *next)) : json();
}

}  // namespace

void AdminApi::listEvents(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto db = webhookEventsDb(store_, eventsDbs_, *id);
  if (!db) return sendError(res, db.error());
  auto query = readListQuery(req, store_, *id, kEventsCursor);
  if (!query) return sendError(res, query.error());
  // A webhook with no events file has had no event.
  auto page = db.value()
                  ? db.value()->listEvents(query->filter, query->page.limit, query->page.after)
                  : HistoryPage<EventRecord>();
  if (!page) return sendError(res, page.error());
  TargetLabels labels(store_, *id);
  json events = json::array();
  for (const EventRecord& e : page->items) events.push_back(eventSummaryJson(e, labels));
  sendJson(res, 200, {{"events", std::move(events)},
                      {"next_cursor", nextCursor(kEventsCursor, page->next)}});
}

void AdminApi::getEvent(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto eventId = pathId(req, res, 2, "event");
  if (!eventId) return;
  auto db = webhookEventsDb(store_, eventsDbs_, *id);
  if (!db) return sendError(res, db.error());
  if (auto params = queryParams(req, {}); !params) return sendError(res, params.error());
  auto event = db.value() ? db.value()->showEvent(*eventId)
                          : Result<EventRecord>(makeError(error_code::kNotFound, "no events yet"));
  if (!event && event.error().isNotFound())
    return sendError(res, 404, error_code::kNotFound, "no event " + *eventId + " in this webhook");
  if (!event) return sendError(res, event.error());
  TargetLabels labels(store_, *id);
  sendJson(res, 200, eventDetailJson(event.value(), labels));
}

void AdminApi::listDeliveries(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto db = webhookEventsDb(store_, eventsDbs_, *id);
  if (!db) return sendError(res, db.error());
  auto query = readListQuery(req, store_, *id, kDeliveriesCursor);
  if (!query) return sendError(res, query.error());
  auto page = db.value()
                  ? db.value()->listDeliveries(query->filter, query->page.limit, query->page.after)
                  : HistoryPage<DeliveryRecord>();
  if (!page) return sendError(res, page.error());
  TargetLabels labels(store_, *id);
  json deliveries = json::array();
  for (const DeliveryRecord& d : page->items) deliveries.push_back(deliveryJson(d, labels));
  sendJson(res, 200, {{"deliveries", std::move(deliveries)},
                      {"next_cursor", nextCursor(kDeliveriesCursor, page->next)}});
}

}  // namespace webhooker::server
