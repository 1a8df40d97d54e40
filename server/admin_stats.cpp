// Admin API: a webhook at a glance — its events and deliveries by status,
// per target the backlog, circuit breaker and latest failure, and the last
// 24 hours hour by hour. What the console's lists and chart show.
#include "server/admin_api.h"
#include "server/history_params.h"
#include "server/json_io.h"
#include "server/target_health_fields.h"

namespace webhooker::server {

namespace {

using nlohmann::json;

constexpr int kChartHours = 24;

json countsJson(const DeliveryCounts& c) {
  return {{"pending", c.pending},
          {"retrying", c.retrying},
          {"delivered", c.delivered},
          {"failed", c.failed}};
}

json lastFailureJson(const std::optional<LastFailure>& f) {
  if (!f) return json();
  return {{"at", f->at},
          {"status_code", f->statusCode ? json(*f->statusCode) : json()},
          {"error", f->error ? json(*f->error) : json()},
          {"delivery_id", f->deliveryId},
          {"event_id", f->eventId}};
}

json breakerJson(const CircuitBreakers& breakers, const TargetRecord& t) {
  if (!hasBreaker(t)) return json();
  const CircuitBreakers::Status s = breakers.status(t.id);
  return {{"state", breakerStateWord(s.state)},
          {"consecutive_failures", s.consecutiveFailures},
          {"retry_in_ms", s.retryIn.count()}};
}

json oldestWaitingJson(const std::optional<OldestWaiting>& w) {
  if (!w) return json();
  return {{"delivery_id", w->deliveryId},
          {"event_id", w->eventId},
          {"status", statusWord(w->status)},
          {"attempts", w->attempts},
          {"next_attempt_at", w->nextAttemptAt ? json(*w->nextAttemptAt) : json()}};
}

// A closed file is read on a connection holding it alone, as the sampler
// reads it: a view gives a quiet file no WAL or -shm and evicts nothing
// from the pool. A file the pool holds (or one that cannot be read so) is
// read through the pool.
Result<WebhookStats> readWebhookStats(EventsDbPool& eventsDbs, const std::string& webhookId) {
  if (auto closed = eventsDbs.statsIfClosed(webhookId, kChartHours)) return std::move(*closed);
  auto db = eventsDbs.getIfMade(webhookId);
  if (!db) return db.error();
  if (db.value()) return db.value()->stats(kChartHours);
  // Closed since the first look, and no file: read as closed again.
  if (auto closed = eventsDbs.statsIfClosed(webhookId, kChartHours)) return std::move(*closed);
  return makeError(error_code::kStorageBusy, "the webhook's events file changed meanwhile");
}

}  // namespace

void AdminApi::webhookStats(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  if (auto w = store_.getWebhook(*id); !w) return sendError(res, w.error());
  if (auto params = queryParams(req, {}); !params) return sendError(res, params.error());
  auto targets = store_.listTargets(*id);
  if (!targets) return sendError(res, targets.error());
  auto stats = readWebhookStats(eventsDbs_, *id);
  if (!stats) return sendError(res, stats.error());

  // Every live target, with or without deliveries; deleted targets'
  // deliveries still count in the webhook's totals.
  json targetsOut = json::array();
  for (const TargetRecord& t : targets.value()) {
    const TargetActivity* activity = nullptr;
    for (const TargetActivity& a : stats->targets)
      if (a.targetId == t.id) activity = &a;
    targetsOut.push_back({{"target_id", t.id},
                          {"target_name", t.name},
                          {"target_type", targetTypeWord(t.type)},
                          {"active", t.active},
                          {"deliveries", countsJson(activity ? activity->deliveries
                                                             : DeliveryCounts{})},
                          {"breaker", breakerJson(breakers_, t)},
                          {"last_failure", lastFailureJson(activity ? activity->lastFailure
                                                                    : std::nullopt)},
                          // Endpoint health: its state, and what waits.
                          {"state", targetStateWord(t.state())},
                          {"disabled_reason", t.disabled ? json(disabledReasonWord(t.disabled->reason))
                                                         : json()},
                          {"ordering", orderingWord(t.health.ordering)},
                          {"oldest_waiting", oldestWaitingJson(activity ? activity->oldestWaiting
                                                                        : std::nullopt)},
                          {"oldest_pending_age_seconds",
                           activity && activity->oldestDueAgeSeconds
                               ? json(*activity->oldestDueAgeSeconds)
                               : json(0)}});
  }
  json hours = json::array();
  for (const HourlyCount& h : stats->hours)
    hours.push_back({{"hour", h.hour}, {"received", h.received}, {"failed", h.failed}});
  sendJson(res, 200, {{"webhook_id", *id},
                      {"events", stats->events},
                      {"deliveries", countsJson(stats->deliveries)},
                      {"targets", std::move(targetsOut)},
                      {"hourly", std::move(hours)}});
}

}  // namespace webhooker::server
