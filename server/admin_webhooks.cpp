// Admin API: webhooks and their entrypoints.
#include <spdlog/spdlog.h>

#include "base/json_pointer.h"
#include "base/uuid.h"
#include "server/admin_api.h"
#include "server/history_params.h"
#include "server/inbound_settings.h"
#include "server/json_io.h"
#include "server/request_fields.h"

namespace webhooker::server {

namespace {

using nlohmann::json;

constexpr size_t kMaxDescription = 2000;
constexpr int64_t kMaxRetentionDays = 3650;
constexpr int64_t kMaxMaxEvents = 10'000'000;
constexpr size_t kMaxMaskPointers = 64;
constexpr size_t kMaxPointerLength = 1024;
constexpr const char* kWebhooksCursor = "webhooks";

// An entrypoint's name: 1 to kMaxNameLength characters, no '/' (it goes
// into paths) and not shaped like an id (an id always wins over a name).
Result<std::optional<std::string>> entrypointNameField(const json& body) {
  auto name = stringField(body, "name", kMaxNameLength);
  if (!name) return name.error();
  if (name.value() && (name.value()->find('/') != std::string::npos || isUuid(*name.value())))
    return makeError(error_code::kInvalidField,
                     "name must be 1 to " + std::to_string(kMaxNameLength) +
                         " characters, without '/', and not shaped like an id");
  return name;
}

// The fields an entrypoint's POST and PATCH take; absent ones are nullopt.
// The inbound settings (verification, handshake, response) are applied onto
// the entrypoint's current ones by server/inbound_settings.h.
struct EntrypointFields {
  std::optional<std::string> name;
  std::optional<bool> active;
  std::optional<EventTypeRule> eventType;
};

Result<EntrypointFields> entrypointFields(const json& body) {
  if (auto r = refuseUnknownFields(
          body, {"name", "active", "verification", "event_type", "handshake", "response"});
      !r)
    return r.error();
  auto name = entrypointNameField(body);
  if (!name) return name.error();
  auto active = boolField(body, "active");
  if (!active) return active.error();
  std::optional<EventTypeRule> eventType;
  if (body.contains("event_type")) {
    auto rule = parseEventTypeRule(body["event_type"]);
    if (!rule) return rule.error();
    eventType = rule.value();
  }
  return EntrypointFields{name.value(), active.value(), eventType};
}

json entrypointJson(const Entrypoint& e) {
  json out = {{"id", e.id},
              {"name", e.name},
              {"url", "/hooks/" + e.id},
              {"active", e.active},
              // The secrets are never shown; null: a scheme this release does not know.
              {"verification", e.verification ? json(schemeWord(*e.verification)) : json()},
              {"event_type", eventTypeRuleJson(storedEventTypeRule(e.eventTypeRule))},
              {"created_at", e.createdAt},
              {"updated_at", e.updatedAt}};
  addInboundJson(e, out);
  return out;
}

// Absent → nullopt. Present: an array of at most kMaxMaskPointers JSON
// pointers (RFC 6901), so the retention pass never meets one it cannot use.
Result<std::optional<std::vector<std::string>>> maskPointersField(const json& body) {
  if (!body.contains("mask_pointers")) return std::optional<std::vector<std::string>>();
  const json& v = body.at("mask_pointers");
  const auto invalid = [](const std::string& why) {
    return makeError(error_code::kInvalidField,
                     "mask_pointers must be an array of at most " +
                         std::to_string(kMaxMaskPointers) +
                         " JSON pointers (RFC 6901: \"\" or starting with "
                         "\"/\", \"~\" only as ~0 or ~1); " +
                         why);
  };
  if (!v.is_array()) return invalid("it is not an array");
  if (v.size() > kMaxMaskPointers) return invalid(std::to_string(v.size()) + " were given");
  std::vector<std::string> pointers;
  for (const json& p : v) {
    if (!p.is_string() || p.get_ref<const std::string&>().size() > kMaxPointerLength ||
        !parseJsonPointer(p.get_ref<const std::string&>()))
      return invalid(p.dump(-1, ' ', false, json::error_handler_t::replace) + " is not one");
    pointers.push_back(p.get<std::string>());
  }
  return std::optional<std::vector<std::string>>(std::move(pointers));
}

// A changed pointer list also applies to events the retention pass already
// examined: they are looked at again on its next pass. Masking cannot be
// undone, so a removed pointer unmasks nothing.
void remaskLater(EventsDbPool& eventsDbs, const std::string& webhookId) {
  auto db = eventsDbs.getIfMade(webhookId);
  if (db && !db.value()) return;  // no events yet
  auto reset = db ? db.value()->resetMasking() : Result<void>(db.error());
  if (!reset)
    spdlog::error("webhook.mask_reset_failed webhook_id={} error=\"{}\"", webhookId,
                  reset.error().message);
}

// The fields a webhook is created or changed with; each one optional here.
Result<WebhookPatch> webhookFields(const json& body) {
  if (auto r = refuseUnknownFields(
          body, {"name", "description", "retention_days", "max_events", "mask_pointers"});
      !r)
    return r.error();
  auto name = stringField(body, "name", kMaxNameLength);
  if (!name) return name.error();
  auto description = stringField(body, "description", kMaxDescription, true);
  if (!description) return description.error();
  auto retention = intField(body, "retention_days", 1, kMaxRetentionDays);
  if (!retention) return retention.error();
  auto maxEvents = intField(body, "max_events", 1, kMaxMaxEvents);
  if (!maxEvents) return maxEvents.error();
  auto maskPointers = maskPointersField(body);
  if (!maskPointers) return maskPointers.error();
  WebhookPatch fields{name.value(), description.value(), std::nullopt, maxEvents.value(),
                      std::move(maskPointers.value())};
  if (retention.value()) fields.retentionDays = static_cast<int>(*retention.value());
  return fields;
}

// The webhook with its entrypoints, as every webhook response shows it.
json webhookJson(const Webhook& w, const std::vector<Entrypoint>& entrypoints) {
  json eps = json::array();
  for (const Entrypoint& e : entrypoints) eps.push_back(entrypointJson(e));
  return json{{"id", w.id},
              {"name", w.name},
              {"description", w.description},
              {"retention_days", w.retentionDays},
              {"max_events", w.maxEvents},
              // Once every delivery of an event is final these values read
              // "[masked]" in its stored body, and a replay sends that form.
              {"mask_pointers", w.maskPointers},
              {"created_at", w.createdAt},
              {"updated_at", w.updatedAt},
              {"entrypoints", eps}};
}

}  // namespace

Result<json> AdminApi::webhookView(const Webhook& w) {
  auto entrypoints = store_.listEntrypoints(w.id);
  if (!entrypoints) return entrypoints.error();
  return webhookJson(w, entrypoints.value());
}

// ?limit=&cursor=, as the history listings take them; pages run oldest
// first, so webhooks created during a walk come after the pages given.
void AdminApi::listWebhooks(const HttpRequest& req, HttpResponse& res) {
  auto params = queryParams(req, {"limit", "cursor"});
  if (!params) return sendError(res, params.error());
  auto asked = readPage(*params, kWebhooksCursor);
  if (!asked) return sendError(res, asked.error());
  auto page = store_.listWebhooksPage(asked->limit, asked->after);
  if (!page) return sendError(res, page.error());
  json out = json::array();
  for (const ListedWebhook& listed : page->items)
    out.push_back(webhookJson(listed.webhook, listed.entrypoints));
  sendJson(res, 200, {{"webhooks", std::move(out)},
                      {"next_cursor", page->next ? json(encodeCursor(kWebhooksCursor, *page->next))
                                                 : json()}});
}

void AdminApi::createWebhook(const HttpRequest& req, HttpResponse& res) {
  auto body = parseJsonObject(req, res);
  if (!body) return;
  auto fields = webhookFields(*body);
  if (!fields) return sendError(res, fields.error());
  if (!fields->name) return sendError(res, 400, error_code::kInvalidField, "name is required");

  // Only the main DB's rows: the webhook's events file is made by its
  // first event (EventsDbPool::get), so a create costs its share of one
  // main-DB commit, and a crash leaves the rows or nothing.
  auto created = store_.createWebhookWithEntrypoint(
      *fields->name, fields->description.value_or(""),
      fields->retentionDays.value_or(Webhook::kDefaultRetentionDays),
      fields->maxEvents.value_or(Webhook::kDefaultMaxEvents),
      fields->maskPointers.value_or(std::vector<std::string>()), newUuid());
  if (!created) return sendError(res, created.error());
  // Answered from what was written: a read would wait behind the next
  // group's commit.
  spdlog::info("webhook.created webhook_id={}", created->webhook.id);
  sendJson(res, 201, webhookJson(created->webhook, created->entrypoints));
}

void AdminApi::getWebhook(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto w = store_.getWebhook(*id);
  if (!w) return sendError(res, w.error());
  auto view = webhookView(w.value());
  if (!view) return sendError(res, view.error());
  sendJson(res, 200, view.value());
}

void AdminApi::updateWebhook(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto body = parseJsonObject(req, res);
  if (!body) return;
  auto fields = webhookFields(*body);
  if (!fields) return sendError(res, fields.error());
  auto before = store_.getWebhook(*id);
  if (!before) return sendError(res, before.error());
  auto updated = store_.updateWebhook(*id, fields.value());
  if (!updated) return sendError(res, updated.error());
  if (updated->maskPointers != before->maskPointers) remaskLater(eventsDbs_, *id);
  auto view = webhookView(updated.value());
  if (!view) return sendError(res, view.error());
  sendJson(res, 200, view.value());
}

Result<void> deleteWebhookWithEvents(MainStore& store, EventsDbPool& eventsDbs,
                                     const std::string& webhookId) {
  if (auto r = store.deleteWebhook(webhookId); !r) return r.error();
  if (auto r = eventsDbs.remove(webhookId); !r) {
    // The webhook is gone; a stray file is only disk space. Say so loudly.
    spdlog::error("webhook.events_db_remove_failed webhook_id={} error=\"{}\"", webhookId,
                  r.error().message);
  }
  spdlog::info("webhook.deleted webhook_id={}", webhookId);
  return {};
}

void AdminApi::deleteWebhook(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  if (auto r = deleteWebhookWithEvents(store_, eventsDbs_, *id); !r)
    return sendError(res, r.error());
  res.status = 204;
}

void AdminApi::listEntrypoints(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  if (auto w = store_.getWebhook(*id); !w) return sendError(res, w.error());
  auto entrypoints = store_.listEntrypoints(*id);
  if (!entrypoints) return sendError(res, entrypoints.error());
  json out = json::array();
  for (const Entrypoint& e : entrypoints.value()) out.push_back(entrypointJson(e));
  sendJson(res, 200, {{"entrypoints", out}});
}

void AdminApi::createEntrypoint(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  if (auto r = refuseOperationalEntrypoint(*id); !r)
    return sendError(res, 409, r.error().code, r.error().message);
  // An empty body is fine; a body, if sent, must be a JSON object with
  // nothing but the entrypoint's fields. One INSERT: a refused request
  // creates nothing.
  EntrypointSettings settings;
  if (!req.body.empty()) {
    auto body = parseJsonObject(req, res);
    if (!body) return;
    auto fields = entrypointFields(*body);
    if (!fields) return sendError(res, fields.error());
    if (fields->name) settings.name = *fields->name;
    if (fields->active) settings.active = *fields->active;
    auto inbound = applyInboundFields(*body, Entrypoint{});
    if (!inbound) return sendError(res, inbound.error());
    if (inbound.value()) {
      settings.verification = inbound.value()->verification.value_or(VerificationScheme::kNone);
      settings.verificationSecret = inbound.value()->verificationSecret;
      settings.inboundSettings = inbound.value()->inboundSettings;
      settings.inboundSecrets = inbound.value()->inboundSecrets;
    }
    if (fields->eventType) {
      if (auto r = checkPrograms(*fields->eventType); !r) return sendError(res, r.error());
      settings.eventTypeRule = eventTypeRuleText(*fields->eventType);
    }
  }
  auto created = store_.createEntrypoint(*id, settings);
  if (!created) return sendError(res, created.error());
  sendJson(res, 201, entrypointJson(created.value()));
}

void AdminApi::updateEntrypoint(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto eid = entrypointRef(req, res, *id);
  if (!eid) return;
  auto body = parseJsonObject(req, res);
  if (!body) return;
  auto fields = entrypointFields(*body);
  if (!fields) return sendError(res, fields.error());
  // Verification, handshake and response apply onto what the entrypoint
  // has now; everything is checked before the one UPDATE.
  auto current = store_.getEntrypoint(*eid);
  if (!current && !current.error().isNotFound()) return sendError(res, current.error());
  if (!current || current->webhookId != *id)
    return sendError(res, 404, error_code::kNotFound, "no such entrypoint");
  auto inbound = applyInboundFields(*body, current.value());
  if (!inbound) return sendError(res, inbound.error());
  if (!fields->name && !fields->active && !inbound.value() && !fields->eventType)
    return sendError(res, 400, error_code::kInvalidField,
                     "name, active, verification, handshake, response or event_type is required");
  EntrypointPatch patch{fields->name, fields->active, inbound.value(), std::nullopt};
  if (fields->eventType) {
    if (auto r = checkPrograms(*fields->eventType); !r) return sendError(res, r.error());
    patch.eventTypeRule = eventTypeRuleText(*fields->eventType);
  }
  auto updated = store_.patchEntrypoint(*id, *eid, patch);
  if (!updated) return sendError(res, updated.error());
  sendJson(res, 200, entrypointJson(updated.value()));
}

void AdminApi::deleteEntrypoint(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto eid = entrypointRef(req, res, *id);
  if (!eid) return;
  if (auto r = store_.deleteEntrypoint(*id, *eid); !r) return sendError(res, r.error());
  res.status = 204;
}

}  // namespace webhooker::server
