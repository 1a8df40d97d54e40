// Admin API: targets. Configs are validated per type on every write and
// shown redacted on every read.
#include <spdlog/spdlog.h>

#include <chrono>

#include "base/url.h"
#include "server/admin_api.h"
#include "server/json_io.h"
#include "server/request_fields.h"
#include "server/target_health_fields.h"
#include "routing/routing_rules.h"
#include "targets/queue_config.h"
#include "targets/target_config.h"
#include "targets/webhook_signature.h"

namespace webhooker::server {

namespace {

using nlohmann::json;

constexpr int64_t kMaxConcurrency = 64;

json targetJson(const TargetRecord& t) {
  json config = json::parse(t.configJson, nullptr, false);
  json out = {{"id", t.id},
              {"webhook_id", t.webhookId},
              {"name", t.name},
              {"type", targetTypeWord(t.type)},
              {"active", t.active},
              {"max_concurrency", t.maxConcurrency},
              {"config", redactTargetConfig(t.type, config.is_discarded() ? json::object() : config)},
              {"retry", retryPolicyJson(t.retry)},
              {"created_at", t.createdAt},
              {"updated_at", t.updatedAt}};
  if (t.deletedAt) out["deleted_at"] = *t.deletedAt;
  out.update(targetRoutingJson(storedTargetRouting(t.routingJson)));
  addTargetHealthView(t, out);
  return out;
}

// refuseUnknownFields for a target body: `known` plus the health fields.
Result<void> refuseUnknownTargetFields(const json& body,
                                       std::initializer_list<std::string_view> known) {
  json rest = body;
  for (std::string_view field : kTargetHealthFields) rest.erase(std::string(field));
  return refuseUnknownFields(rest, known);
}

// The fields create and update share, applied onto `target`. `config` is
// merged (RFC 7386) into what the target has, so an update can change the
// URL without sending the secret again.
// `generated` receives a signing secret made for "signing_secret": "generate",
// to be shown once in the response.
// `enable` receives what the write asks of the target's enabled state.
Result<void> applyCommonFields(json body, const SsrfGuard& guard, TargetRecord& target,
                               std::optional<std::string>& generated, EnableRequest& enable) {
  if (body.contains("config") && body["config"].is_object() &&
      body["config"].value("signing_secret", json()) == "generate") {
    generated = newSigningSecret();
    body["config"]["signing_secret"] = *generated;
  }
  auto name = stringField(body, "name", kMaxNameLength);
  if (!name) return name.error();
  if (name.value()) target.name = *name.value();
  auto health = applyTargetHealthFields(body, target);
  if (!health) return health.error();
  enable = health.value();
  auto concurrency = intField(body, "max_concurrency", 1, kMaxConcurrency);
  if (!concurrency) return concurrency.error();
  if (concurrency.value()) target.maxConcurrency = static_cast<int>(*concurrency.value());

  json config = json::parse(target.configJson, nullptr, false);
  if (config.is_discarded()) config = json::object();
  const json before = config;
  if (body.contains("config")) {
    if (!body["config"].is_object())
      return makeError(error_code::kInvalidConfig, "config must be a JSON object");
    config.merge_patch(body["config"]);
  }
  // A replaced signing secret keeps signing for a grace period so receivers
  // can switch over. AdminApi has no injected clock; wall time is what the
  // operator's expiry is measured against anyway.
  applySigningRotation(before, body, config, std::chrono::system_clock::now());
  auto valid = validateTargetConfig(target.type, config);
  if (!valid) return valid.error();
  // A literal internal address can be refused now; host names are vetted at
  // every delivery (what they resolve to may change).
  // The token endpoint too: it is sent to like a receiver.
  const std::pair<const char*, const char*> vetted[] = {
      {"/url", "url"}, {"/webhook_url", "webhook_url"}, {"/oauth2/token_url", "oauth2.token_url"}};
  for (const auto& [pointer, field] : vetted) {
    const json::json_pointer at(pointer);
    if (!valid->contains(at)) continue;
    if (auto url = parseHttpUrl((*valid)[at].get<std::string>())) {
      if (auto r = guard.vetLiteral(*url); !r)
        return makeError(error_code::kBlockedDestination,
                         std::string("config.") + field + ": " + r.error().message);
    }
  }
  if (auto url = queueConfigVettableUrl(target.type, *valid)) {
    if (auto r = guard.vetLiteral(*url); !r)
      return makeError(error_code::kBlockedDestination, "config.url: " + r.error().message);
  }
  target.configJson = valid->dump();

  if (body.contains("retry")) {
    auto retry = applyRetryPolicy(body["retry"], target.retry);
    if (!retry) return retry.error();
    target.retry = retry.value();
  }
  auto routing = applyTargetRouting(body, storedTargetRouting(target.routingJson));
  if (!routing) return routing.error();
  target.routingJson = targetRoutingText(routing.value());
  return {};
}

}  // namespace

void AdminApi::listTargets(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  if (auto w = store_.getWebhook(*id); !w) return sendError(res, w.error());
  auto targets = store_.listTargets(*id);
  if (!targets) return sendError(res, targets.error());
  json out = json::array();
  for (const TargetRecord& t : targets.value()) out.push_back(targetJson(t));
  sendJson(res, 200, {{"targets", out}});
}

void AdminApi::createTarget(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto body = parseJsonObject(req, res);
  if (!body) return;
  if (auto r = refuseUnknownTargetFields(
          *body, {"name", "type", "active", "max_concurrency", "config", "retry", "filter",
                     "transform", "rate_limit"});
      !r)
    return sendError(res, r.error());
  auto type = stringField(*body, "type", 32);
  if (!type) return sendError(res, type.error());
  const std::optional<TargetType> parsed =
      type.value() ? parseTargetType(*type.value()) : std::nullopt;
  if (!parsed) {
    std::string words;
    for (TargetType t : kTargetTypes)
      words += (words.empty() ? "" : ", ") + std::string(targetTypeWord(t));
    return sendError(res, 400, error_code::kInvalidField, "type must be one of " + words);
  }
  if (!body->contains("name"))
    return sendError(res, 400, error_code::kInvalidField, "name is required");

  TargetRecord target;
  target.webhookId = *id;
  target.type = *parsed;
  std::optional<std::string> generated;
  EnableRequest enable = EnableRequest::kNone;
  if (auto r = applyCommonFields(*body, guard_, target, generated, enable); !r)
    return sendError(res, r.error());
  if (auto r = checkOperationalTarget(target); !r) return sendError(res, r.error());
  if (auto r = checkPrograms(storedTargetRouting(target.routingJson)); !r)
    return sendError(res, r.error());

  auto created = store_.createTarget(std::move(target));
  if (!created) return sendError(res, created.error());
  spdlog::info("target.created webhook_id={} target_id={} type={}", *id, created->id,
               targetTypeWord(created->type));
  json view = targetJson(created.value());
  if (generated) view["generated_signing_secret"] = *generated;  // shown this once
  sendJson(res, 201, view);
}

void AdminApi::getTarget(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto tid = targetRef(req, res, *id);
  if (!tid) return;
  auto target = store_.getTarget(*id, *tid);
  if (!target) return sendError(res, target.error());
  if (target->deletedAt)
    return sendError(res, 404, error_code::kNotFound, "target " + *tid + " was deleted");
  sendJson(res, 200, targetJson(target.value()));
}

void AdminApi::updateTarget(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto tid = targetRef(req, res, *id);
  if (!tid) return;
  auto body = parseJsonObject(req, res);
  if (!body) return;
  if (auto r = refuseUnknownTargetFields(
          *body, {"name", "type", "active", "max_concurrency", "config", "retry", "filter",
                     "transform", "rate_limit"});
      !r)
    return sendError(res, r.error());
  auto target = store_.getTarget(*id, *tid);
  if (!target) return sendError(res, target.error());
  if (target->deletedAt)
    return sendError(res, 404, error_code::kNotFound, "target " + *tid + " was deleted");
  if (body->contains("type") && (*body)["type"] != std::string(targetTypeWord(target->type)))
    return sendError(res, 400, error_code::kImmutableField,
                     "type cannot change; create a new target instead");
  std::optional<std::string> generated;
  EnableRequest enable = EnableRequest::kNone;
  const std::string configBefore = target->configJson;
  if (auto r = applyCommonFields(*body, guard_, target.value(), generated, enable); !r)
    return sendError(res, r.error());
  if (auto r = checkOperationalTarget(target.value()); !r) return sendError(res, r.error());
  if (auto r = checkPrograms(storedTargetRouting(target->routingJson)); !r)
    return sendError(res, r.error());
  auto updated = store_.updateTarget(target.value());
  if (!updated) return sendError(res, updated.error());
  spdlog::info("target.updated webhook_id={} target_id={}", *id, *tid);
  // An operator's word on the target's state ends a disable.
  if (enable != EnableRequest::kNone && updated->disabled) {
    const std::string reason(disabledReasonWord(updated->disabled->reason));
    auto cleared = store_.setTargetDisabled(*id, *tid, std::nullopt);
    if (!cleared) return sendError(res, cleared.error());
    if (cleared.value()) {
      spdlog::info("target.enabled webhook_id={} target_id={} reason=operator was={} state={}",
                   *id, *tid, reason, enable == EnableRequest::kEnable ? "active" : "inactive");
      if (enable == EnableRequest::kEnable && operationalEvents_)
        operationalEvents_->publish(OperationalEventType::kTargetEnabled,
                                    {{"webhook_id", *id},
                                     {"target_id", *tid},
                                     {"target_name", updated->name},
                                     {"reason", "operator"}});
    }
    updated = store_.getTarget(*id, *tid);
    if (!updated) return sendError(res, updated.error());
  }
  // A new URL or config deserves a fresh start: the old breaker's cooldown
  // would otherwise hold the first deliveries back with nothing saying why.
  if (body->contains("config") &&
      json::parse(updated->configJson, nullptr, false) != json::parse(configBefore, nullptr, false))
    dispatcher_.receiverChanged(*id, *tid);
  else
    dispatcher_.targetChanged(*id, *tid);
  json view = targetJson(updated.value());
  if (generated) view["generated_signing_secret"] = *generated;  // shown this once
  sendJson(res, 200, view);
}

void AdminApi::deleteTarget(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto tid = targetRef(req, res, *id);
  if (!tid) return;
  if (auto r = store_.deleteTarget(*id, *tid); !r) return sendError(res, r.error());
  spdlog::info("target.deleted webhook_id={} target_id={}", *id, *tid);
  dispatcher_.targetChanged(*id, *tid);
  res.status = 204;
}

}  // namespace webhooker::server
