// Admin API: routing — the compile check of programs when they are saved,
// and the preview of a target's routing on a stored event.
#include "server/admin_api.h"
#include "server/json_io.h"

namespace webhooker::server {

namespace {

using nlohmann::json;

Error unavailable() {
  return makeError(error_code::kJqUnavailable,
                   "jq programs cannot be checked: no jq worker is running");
}

}  // namespace

Result<void> AdminApi::checkPrograms(const EventTypeRule& rule) {
  if (rule.source != EventTypeSource::kJq) return {};
  if (!routing_) return unavailable();
  return routing_->check(rule);
}

Result<void> AdminApi::checkPrograms(const TargetRouting& routing) {
  if (routing.filterJq.empty() && routing.transformJq.empty()) return {};
  if (!routing_) return unavailable();
  return routing_->check(routing);
}

void AdminApi::previewTarget(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto tid = targetRef(req, res, *id);
  if (!tid) return;
  auto body = parseJsonObject(req, res);
  if (!body) return;
  if (body->size() != 1 || !body->contains("event_id") || !(*body)["event_id"].is_string())
    return sendError(res, 400, error_code::kInvalidField,
                     "the body must be {\"event_id\": \"<id>\"}");
  const std::string eventId = (*body)["event_id"].get<std::string>();
  auto target = store_.getTarget(*id, *tid);
  if (!target) return sendError(res, target.error());
  if (target->deletedAt)
    return sendError(res, 404, error_code::kNotFound, "target " + *tid + " was deleted");
  auto db = eventsDbs_.getIfMade(*id);
  if (!db) return sendError(res, db.error());
  auto payload =
      db.value()
          ? db.value()->loadPayload(eventId)
          : Result<EventPayload>(makeError(error_code::kNotFound, "event " + eventId + " is gone"));
  if (!payload) return sendError(res, payload.error());

  const TargetRouting routing = storedTargetRouting(target->routingJson);
  if (!routing_ && (!routing.filterJq.empty() || !routing.transformJq.empty()))
    return sendError(res, 503, error_code::kJqUnavailable, unavailable().message);
  // Ordered, so the body keeps the key order the receiver gets.
  using OrderedJson = nlohmann::ordered_json;
  OrderedJson out = {
      {"event_id", eventId},
      {"event_type", payload->eventType ? OrderedJson(*payload->eventType) : OrderedJson(nullptr)},
      {"filter_error", nullptr},
      {"transformed", !routing.transformJq.empty()},
      {"body", nullptr},
      {"transform_error", nullptr}};
  bool matched = eventTypesMatch(routing, payload->eventType);
  if (matched && !routing.filterJq.empty()) {
    auto passed = routing_->passes(routing.filterJq,
                                   jqInput(payload->eventType, payload->headers, payload->body,
                                           payload->receivedAt),
                                   *id);
    if (!passed) out["filter_error"] = passed.error().message;
    matched = passed && passed.value();
  }
  out["matched"] = matched;
  if (!routing.transformJq.empty()) {
    auto transformed = routing_->transform(routing, payload.value(), *id);
    if (transformed) out["body"] = OrderedJson::parse(transformed->body, nullptr, false);
    else out["transform_error"] = transformed.error().message;
  }
  sendOrderedJson(res, 200, out);
}

}  // namespace webhooker::server
