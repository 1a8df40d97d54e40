// Admin API: /api/v1/settings/operational-webhook — where operational events
// go (engine/operational_events.h).
//
//   PUT  {"url", "signing_secret" (whsec_..., or "generate"), "event_types"}
//        makes (or changes) the operational webhook: an ordinary webhook
//        without entrypoints and one http target that signs every request.
//        signing_secret may be left out once one is set; event_types
//        defaults to all. 200 with the setting, the secret redacted.
//   GET  the setting, or 404.
//   DELETE  stops sending; the webhook and its history stay. 204.
#include <spdlog/spdlog.h>

#include "base/url.h"
#include "server/admin_api.h"
#include "server/json_io.h"
#include "server/request_fields.h"
#include "targets/target_config.h"
#include "targets/webhook_signature.h"

namespace webhooker::server {

namespace {

using nlohmann::json;

constexpr const char* kWebhookName = "operational-events";
constexpr const char* kTargetName = "operational-webhook";

json settingView(const OperationalWebhookSetting& setting, const TargetRecord& target) {
  json config = json::parse(target.configJson, nullptr, false);
  if (config.is_discarded()) config = json::object();
  const json shown = redactTargetConfig(TargetType::kHttp, config);
  json types = json::array();
  for (OperationalEventType type : setting.eventTypes) types.push_back(operationalEventWord(type));
  return {{"url", shown.value("url", "")},
          {"signing_secret", shown.value("signing_secret", "")},
          {"event_types", types},
          {"webhook_id", setting.webhookId},
          {"target_id", setting.targetId}};
}

Result<std::set<OperationalEventType>> eventTypesField(const json& body) {
  std::set<OperationalEventType> types;
  if (!body.contains("event_types")) {
    types.insert(std::begin(kOperationalEventTypes), std::end(kOperationalEventTypes));
    return types;
  }
  const json& list = body["event_types"];
  std::string known;
  for (OperationalEventType type : kOperationalEventTypes)
    known += (known.empty() ? "" : ", ") + std::string(operationalEventWord(type));
  if (!list.is_array() || list.empty())
    return makeError(error_code::kInvalidField,
                     "event_types must be a non-empty array of: " + known);
  for (const json& word : list) {
    const auto type =
        word.is_string() ? parseOperationalEventType(word.get<std::string>()) : std::nullopt;
    if (!type) return makeError(error_code::kInvalidField, "event_types may hold only: " + known);
    types.insert(*type);
  }
  return types;
}

}  // namespace

void AdminApi::getOperationalWebhook(const HttpRequest&, HttpResponse& res) {
  const auto setting = operationalEvents_ ? operationalEvents_->setting() : std::nullopt;
  if (!setting) return sendError(res, 404, error_code::kNotFound, "no operational webhook is set");
  auto target = store_.getTarget(setting->webhookId, setting->targetId);
  if (!target || target->deletedAt)
    return sendError(res, 404, error_code::kNotFound,
                     "the operational webhook's target was deleted; PUT it again");
  sendJson(res, 200, settingView(*setting, target.value()));
}

void AdminApi::putOperationalWebhook(const HttpRequest& req, HttpResponse& res) {
  if (!operationalEvents_)
    return sendError(res, 503, error_code::kUnavailable,
                     "operational events are not available here");
  auto body = parseJsonObject(req, res);
  if (!body) return;
  if (auto r = refuseUnknownFields(*body, {"url", "signing_secret", "event_types"}); !r)
    return sendError(res, r.error());
  auto types = eventTypesField(*body);
  if (!types) return sendError(res, types.error());

  // The target it had, unless it (or its webhook) is gone.
  std::optional<TargetRecord> existing;
  if (const auto current = operationalEvents_->setting()) {
    if (auto t = store_.getTarget(current->webhookId, current->targetId); t && !t->deletedAt)
      existing = std::move(t.value());
  }
  json config = json::object();
  if (existing) config = json::parse(existing->configJson, nullptr, false);
  if (!config.is_object()) config = json::object();
  if (body->contains("url")) config["url"] = (*body)["url"];
  if (!config.contains("url"))
    return sendError(res, 400, error_code::kInvalidField, "url is required");
  std::optional<std::string> generated;
  if (body->contains("signing_secret")) {
    if ((*body)["signing_secret"] == "generate") generated = newSigningSecret();
    config["signing_secret"] = generated ? json(*generated) : (*body)["signing_secret"];
    config.erase("previous_signing_secret");
    config.erase("previous_secret_expires_at");
  }
  if (!config.contains("signing_secret"))
    return sendError(res, 400, error_code::kInvalidField,
                     "signing_secret is required: a whsec_ secret, or \"generate\"");
  auto valid = validateTargetConfig(TargetType::kHttp, config);
  if (!valid) return sendError(res, valid.error());
  if (auto url = parseHttpUrl((*valid)["url"].get<std::string>())) {
    if (auto r = guard_.vetLiteral(*url); !r)
      return sendError(res, 400, error_code::kBlockedDestination, "url: " + r.error().message);
  }

  TargetRecord target;
  const bool replacing = existing.has_value();
  if (replacing) {
    target = std::move(*existing);
    target.configJson = valid->dump();
    auto updated = store_.updateTarget(target);
    if (!updated) return sendError(res, updated.error());
    target = std::move(updated.value());
  } else {
    auto webhook = store_.createWebhook(kWebhookName,
                                        "Operational events: what happens to the receivers", 30);
    if (!webhook) return sendError(res, webhook.error());
    // Nobody may post into it: its events are the daemon's own.
    auto entrypoints = store_.listEntrypoints(webhook->id);
    if (!entrypoints) return sendError(res, entrypoints.error());
    for (const Entrypoint& e : entrypoints.value())
      if (auto r = store_.deleteEntrypoint(webhook->id, e.id); !r) return sendError(res, r.error());
    target.webhookId = webhook->id;
    target.name = kTargetName;
    target.type = TargetType::kHttp;
    target.configJson = valid->dump();
    auto created = store_.createTarget(std::move(target));
    if (!created) return sendError(res, created.error());
    target = std::move(created.value());
  }
  OperationalWebhookSetting setting{target.webhookId, target.id, std::move(types.value())};
  if (auto r = store_.setSetting(OperationalWebhookSetting::kSettingKey, setting.toJson().dump()); !r)
    return sendError(res, r.error());
  operationalEvents_->reload();
  if (replacing)
    dispatcher_.receiverChanged(target.webhookId, target.id);
  else
    dispatcher_.targetChanged(target.webhookId, target.id);
  spdlog::info("operational_webhook.set webhook_id={} target_id={}", target.webhookId, target.id);
  json view = settingView(setting, target);
  if (generated) view["generated_signing_secret"] = *generated;  // shown this once
  sendJson(res, 200, view);
}

void AdminApi::deleteOperationalWebhook(const HttpRequest&, HttpResponse& res) {
  if (!operationalEvents_ || !operationalEvents_->setting())
    return sendError(res, 404, error_code::kNotFound, "no operational webhook is set");
  if (auto r = store_.deleteSetting(OperationalWebhookSetting::kSettingKey); !r)
    return sendError(res, r.error());
  operationalEvents_->reload();
  spdlog::info("operational_webhook.removed");
  res.status = 204;
}

Result<void> AdminApi::refuseOperationalEntrypoint(const std::string& webhookId) const {
  const auto setting = operationalEvents_ ? operationalEvents_->setting() : std::nullopt;
  if (setting && setting->webhookId == webhookId)
    return makeError(error_code::kOperationalWebhook,
                     "the operational webhook takes no entrypoint: its events are the daemon's own");
  return {};
}

Result<void> AdminApi::checkOperationalTarget(const TargetRecord& target) const {
  const auto setting = operationalEvents_ ? operationalEvents_->setting() : std::nullopt;
  if (!setting || setting->webhookId != target.webhookId) return {};
  const json config = json::parse(target.configJson, nullptr, false);
  if (!config.is_object() || !config.contains("signing_secret") ||
      !config["signing_secret"].is_string() || config["signing_secret"].get<std::string>().empty())
    return makeError(error_code::kInvalidConfig,
                     "config.signing_secret: every target of the operational webhook signs "
                     "every request (an http target with a signing secret); set a new secret "
                     "instead of removing it");
  return {};
}

}  // namespace webhooker::server
