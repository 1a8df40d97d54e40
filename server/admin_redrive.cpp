// Admin API: redrive — retry one dead letter, redeliver one event, replay
// many. Each request is validated whole, then written in one transaction,
// then its deliveries go to the engine like fresh ones: through the target's
// lane, never past its max_concurrency. A full lane drops tasks from memory
// only; the rows are `pending` on disk and the sweep queues them.
#include <spdlog/spdlog.h>

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "server/admin_api.h"
#include "server/history_params.h"
#include "server/history_views.h"
#include "server/json_io.h"
#include "server/request_fields.h"

namespace webhooker::server {

namespace {

using nlohmann::json;

constexpr size_t kSubmitBatch = 500;
constexpr size_t kMaxTimeText = 64;
constexpr const char* kTargetIdsShape = "target_ids must be a non-empty array of target ids";

// Tasks without their payload: the attempt reads it from the events DB, so
// a large replay holds no bodies in memory.
void submitDeliveries(Dispatcher& dispatcher, const std::string& webhookId,
                      const std::vector<UnfinishedDelivery>& deliveries,
                      const std::unordered_map<std::string, TargetType>& typeOf) {
  std::vector<Task> batch;
  for (const UnfinishedDelivery& d : deliveries) {
    const auto type = typeOf.find(d.targetId);
    batch.push_back(
        nextAttempt(webhookId, d, type != typeOf.end() ? type->second : TargetType::kHttp));
    if (batch.size() == kSubmitBatch) dispatcher.submit(std::exchange(batch, {}));
  }
  if (!batch.empty()) dispatcher.submit(std::move(batch));
}

// A body that may be left out altogether: empty is {}.
std::optional<json> optionalJsonObject(const HttpRequest& req, HttpResponse& res) {
  if (req.body.empty()) return json::object();
  return parseJsonObject(req, res);
}

void sendTargetDeleted(HttpResponse& res, const std::string& targetId, const char* advice) {
  sendError(res, 409, error_code::kTargetDeleted, "target " + targetId + " was deleted; " + advice);
}

}  // namespace

void AdminApi::retryDelivery(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto deliveryId = pathId(req, res, 2, "delivery");
  if (!deliveryId) return;
  auto db = webhookEventsDb(store_, eventsDbs_, *id);
  if (!db) return sendError(res, db.error());
  // Redrive acts on stored rows: a webhook with no events file has none.
  auto delivery =
      db.value()
          ? db.value()->getDelivery(*deliveryId)
          : Result<DeliveryRecord>(makeError(error_code::kNotFound, "no delivery " + *deliveryId));
  if (!delivery) return sendError(res, delivery.error());
  auto target = store_.getTarget(*id, delivery->targetId);
  if (!target && !target.error().isNotFound()) return sendError(res, target.error());
  if (!target || target->deletedAt)
    return sendTargetDeleted(res, delivery->targetId,
                             "redeliver the event to another target instead");

  // Checks the status again inside the write transaction.
  auto reset = db.value()->retryDelivery(*deliveryId);
  if (!reset) return sendError(res, reset.error());
  spdlog::info("delivery.retry_requested webhook_id={} delivery_id={} target_id={} "
               "series_start={}",
               *id, *deliveryId, reset->targetId, reset->seriesStart);
  submitDeliveries(dispatcher_, *id, {reset.value()}, {{target->id, target->type}});

  TargetLabels labels(store_, *id);
  auto shown = db.value()->getDelivery(*deliveryId);
  if (!shown) return sendJson(res, 200, {{"id", *deliveryId}, {"status", reset->status}});
  sendJson(res, 200, deliveryJson(shown.value(), labels));
}

void AdminApi::redeliverEvent(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto eventId = pathId(req, res, 2, "event");
  if (!eventId) return;
  auto db = webhookEventsDb(store_, eventsDbs_, *id);
  if (!db) return sendError(res, db.error());
  auto body = optionalJsonObject(req, res);
  if (!body) return;
  if (auto r = refuseUnknownFields(*body, {"target_ids"}); !r) return sendError(res, r.error());

  // New deliveries go only to targets that take deliveries now, as at ingest.
  std::vector<TargetRecord> targets;
  if (body->contains("target_ids")) {
    const json& ids = (*body)["target_ids"];
    if (!ids.is_array() || ids.empty())
      return sendError(res, 400, error_code::kInvalidField, kTargetIdsShape);
    std::unordered_set<std::string> seen;
    for (const json& raw : ids) {
      if (!raw.is_string()) return sendError(res, 400, error_code::kInvalidField, kTargetIdsShape);
      auto target = namedTarget(store_, *id, raw.get<std::string>(), "target_ids entry");
      if (!target) return sendError(res, target.error());
      if (target->deletedAt)
        return sendTargetDeleted(res, target->id, "choose a target that exists");
      if (!target->active)
        return sendError(res, 409, error_code::kTargetInactive,
                         "target " + target->id + " is inactive; activate it first");
      if (seen.insert(target->id).second) targets.push_back(std::move(target.value()));
    }
  } else {
    auto all = store_.listTargets(*id);
    if (!all) return sendError(res, all.error());
    for (TargetRecord& t : all.value())
      if (t.active) targets.push_back(std::move(t));
    if (targets.empty())
      return sendError(res, 409, error_code::kNoActiveTargets, "this webhook has no active target");
  }

  std::vector<std::string> targetIds;
  std::unordered_map<std::string, TargetType> typeOf;
  for (const TargetRecord& t : targets) {
    targetIds.push_back(t.id);
    typeOf[t.id] = t.type;
  }
  auto created =
      db.value() ? db.value()->redeliverEvent(*eventId, targetIds)
                 : Result<std::vector<UnfinishedDelivery>>(makeError(error_code::kNotFound, ""));
  if (!created && created.error().isNotFound())
    return sendError(res, 404, error_code::kNotFound, "no event " + *eventId + " in this webhook");
  if (!created) return sendError(res, created.error());
  spdlog::info("event.redelivered webhook_id={} event_id={} deliveries={}", *id, *eventId,
               created->size());
  submitDeliveries(dispatcher_, *id, created.value(), typeOf);

  TargetLabels labels(store_, *id);
  json deliveries = json::array();
  for (const UnfinishedDelivery& d : created.value()) {
    json shown = {{"id", d.id}, {"target_id", d.targetId}};
    labels.describe(d.targetId, shown);
    shown["status"] = statusWord(d.status);
    deliveries.push_back(std::move(shown));
  }
  sendJson(res, 201, {{"event_id", *eventId}, {"deliveries", std::move(deliveries)}});
}

void AdminApi::replay(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto db = webhookEventsDb(store_, eventsDbs_, *id);
  if (!db) return sendError(res, db.error());
  auto body = optionalJsonObject(req, res);
  if (!body) return;
  if (auto r = refuseUnknownFields(
          *body, {"status", "target_id", "since", "until", "event_type", "dry_run"});
      !r)
    return sendError(res, r.error());

  ReplayRequest replay;
  auto status = stringField(*body, "status", 16);
  if (!status) return sendError(res, status.error());
  const std::string which = status.value().value_or("failed");
  if (which == "failed") replay.filter.statuses = {DeliveryStatus::kFailed};
  else if (which == "all")
    replay.filter.statuses = {DeliveryStatus::kFailed, DeliveryStatus::kDelivered};
  else
    return sendError(res, 400, error_code::kInvalidField, "status must be \"failed\" or \"all\"");
  auto dryRun = boolField(*body, "dry_run");
  if (!dryRun) return sendError(res, dryRun.error());
  replay.dryRun = dryRun.value().value_or(false);
  auto since = stringField(*body, "since", kMaxTimeText);
  if (!since) return sendError(res, since.error());
  auto until = stringField(*body, "until", kMaxTimeText);
  if (!until) return sendError(res, until.error());
  if (auto r = readTimeRange(since.value(), until.value(), replay.filter); !r)
    return sendError(res, r.error());
  auto eventType = stringField(*body, "event_type", kMaxEventTypeLength);
  if (!eventType) return sendError(res, eventType.error());
  if (auto r = readEventType(eventType.value(), replay.filter); !r) return sendError(res, r.error());
  auto targetId = stringField(*body, "target_id", kMaxTimeText);
  if (!targetId) return sendError(res, targetId.error());
  if (targetId.value()) {
    auto target = namedTarget(store_, *id, *targetId.value(), "target_id");
    if (!target) return sendError(res, target.error());
    if (target->deletedAt)
      return sendTargetDeleted(res, target->id, "its deliveries cannot be replayed");
    replay.filter.targetId = target->id;
  }

  // Deliveries of deleted targets are left alone: they would only fail again.
  // Inactive targets' are reset and wait until the target is reactivated.
  auto live = store_.listTargets(*id);
  if (!live) return sendError(res, live.error());
  std::unordered_map<std::string, TargetType> typeOf;
  for (const TargetRecord& t : live.value()) {
    replay.targetIds.push_back(t.id);
    typeOf[t.id] = t.type;
  }

  auto outcome = db.value() ? db.value()->replay(replay) : ReplayOutcome();
  if (!outcome) return sendError(res, outcome.error());
  if (!replay.dryRun) {
    spdlog::info("deliveries.replayed webhook_id={} status={} target_id={} since={} until={} "
                 "count={}",
                 *id, which, replay.filter.targetId.value_or("-"),
                 replay.filter.since.value_or("-"), replay.filter.until.value_or("-"),
                 outcome->count);
    submitDeliveries(dispatcher_, *id, outcome->reset, typeOf);
  }
  sendJson(res, 200, {{"count", outcome->count}, {"dry_run", replay.dryRun}});
}

}  // namespace webhooker::server
