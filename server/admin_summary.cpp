#include "server/admin_summary.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>

#include "base/time_format.h"
#include "server/history_params.h"
#include "server/json_io.h"
#include "server/target_health_fields.h"

namespace webhooker::server {

using nlohmann::json;

NodeSummaryApi::NodeSummaryApi(MainStore& store, const CircuitBreakers& breakers,
                               const BacklogSampler* sampler)
    : store_(store), breakers_(breakers), sampler_(sampler) {}

void NodeSummaryApi::registerRoutes(Router& router) {
  router.add("GET", "/api/v1/summary",
             [this](const HttpRequest& req, HttpResponse& res) { summary(req, res); });
}

namespace {

int64_t secondsBetween(TimePoint from, TimePoint to) {
  return std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::seconds>(to - from).count());
}

}  // namespace

void NodeSummaryApi::summary(const HttpRequest& req, HttpResponse& res) {
  if (auto params = queryParams(req, {}); !params) return sendError(res, params.error());
  const auto sampled = sampler_ ? sampler_->latest() : std::nullopt;
  if (!sampled)
    return sendError(res, 503, error_code::kUnavailable,
                     "the backlog has not been counted yet; try again in a moment");
  auto webhooks = store_.listWebhookIds();
  if (!webhooks) return sendError(res, webhooks.error());
  auto targets = store_.listLiveTargets();
  if (!targets) return sendError(res, targets.error());

  int64_t disabled = 0;
  int64_t breakersOpen = 0;
  const TargetRecord* oldestTarget = nullptr;
  for (const TargetRecord& t : targets.value()) {
    if (t.state() == TargetState::kDisabled) ++disabled;
    if (hasBreaker(t) && breakers_.status(t.id).state == BreakerState::kOpen) ++breakersOpen;
    if (sampled->oldestDue && sampled->oldestDue->targetId == t.id) oldestTarget = &t;
  }
  // The oldest delivery's target may have been deleted since the pass.
  json oldest;
  int64_t oldestAge = 0;
  if (oldestTarget) {
    auto webhook = store_.getWebhook(oldestTarget->webhookId);
    if (!webhook && !webhook.error().isNotFound()) return sendError(res, webhook.error());
    if (webhook) {
      oldest = {{"webhook_id", webhook->id},
                {"webhook_name", webhook->name},
                {"target_id", oldestTarget->id},
                {"target_name", oldestTarget->name}};
      oldestAge = secondsBetween(sampled->oldestDue->createdAt, sampled->sampledAt);
    }
  }
  sendJson(res, 200,
           {{"sampled_at", formatTime(sampled->sampledAt)},
            {"sample_age_seconds", secondsBetween(sampled->sampledAt, store_.clock().now())},
            {"webhooks", webhooks->size()},
            {"targets", targets->size()},
            {"targets_disabled", disabled},
            {"breakers_open", breakersOpen},
            {"backlog", sampled->pending + sampled->retrying},
            {"pending", sampled->pending},
            {"retrying", sampled->retrying},
            {"oldest_pending_age_seconds", oldestAge},
            {"oldest_pending", std::move(oldest)}});
}

}  // namespace webhooker::server
