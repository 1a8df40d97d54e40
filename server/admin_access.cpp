#include "server/admin_access.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "base/secret.h"
#include "base/time_format.h"
#include "base/uuid.h"
#include "server/access_control.h"
#include "server/admin_api.h"
#include "server/history_params.h"
#include "server/json_io.h"
#include "server/request_fields.h"

namespace webhooker::server {

namespace {

using nlohmann::json;

constexpr int64_t kMaxAuditPage = 500;
constexpr int64_t kDefaultAuditPage = 100;

json tokenView(const AccessTokenRecord& t) {
  const auto optional = [](const std::optional<std::string>& v) { return v ? json(*v) : json(); };
  return {{"id", t.id},
          {"webhook_id", t.webhookId},
          {"name", t.name},
          {"scopes", scopeList(parseScope(t.scope).value_or(Scope::kRead))},
          {"created_at", t.createdAt},
          {"expires_at", optional(t.expiresAt)},
          {"revoked_at", optional(t.revokedAt)}};
}

// "expires_at": absent or null for a token that does not expire, otherwise
// a time after `now`, stored in the stored format.
Result<std::optional<std::string>> expiryField(const json& body, TimePoint now) {
  if (!body.contains("expires_at") || body["expires_at"].is_null())
    return std::optional<std::string>();
  const json& v = body["expires_at"];
  const auto at = v.is_string() ? parseTime(v.get<std::string>()) : std::nullopt;
  if (!at) return makeError(error_code::kInvalidField, "expires_at must be a time (ISO 8601)");
  if (*at <= now) return makeError(error_code::kInvalidField, "expires_at must be in the future");
  return std::optional<std::string>(formatTime(*at));
}

json auditView(const AuditRecord& a) {
  const auto optional = [](const std::optional<std::string>& v) { return v ? json(*v) : json(); };
  return {{"id", a.id},
          {"at", a.at},
          {"actor", a.actor},
          {"actor_id", optional(a.actorId)},
          {"webhook_id", optional(a.webhookId)},
          {"method", a.method},
          {"route", a.route},
          {"ids", json::parse(a.ids, nullptr, false)},
          {"fields", json::parse(a.fields, nullptr, false)},
          {"status", a.status}};
}

// The names of a JSON body's fields, one level into objects
// ("config.signing_secret"): what a write changed, without a value.
json fieldNames(const json& parsed) {
  json out = json::array();
  if (!parsed.is_object()) return out;
  for (const auto& item : parsed.items()) {
    out.push_back(item.key());
    if (item.value().is_object())
      for (const auto& inner : item.value().items())
        out.push_back(item.key() + "." + inner.key());
  }
  return out;
}

}  // namespace

json scopeList(Scope scope) {
  json out = json::array();
  for (Scope s : {Scope::kRead, Scope::kOperate, Scope::kManage})
    if (s <= scope) out.push_back(scopeWord(s));
  return out;
}

Result<Scope> scopesField(const json& body) {
  const auto invalid = [] {
    return makeError(error_code::kInvalidField,
                     "scopes must be a non-empty list of \"read\", \"operate\", \"manage\"");
  };
  if (!body.contains("scopes") || !body["scopes"].is_array() || body["scopes"].empty())
    return invalid();
  Scope widest = Scope::kRead;
  for (const json& word : body["scopes"]) {
    const auto scope = word.is_string() ? parseScope(word.get<std::string>()) : std::nullopt;
    if (!scope) return invalid();
    widest = std::max(widest, *scope);
  }
  return widest;
}

void AccessApi::registerRoutes(Router& router) {
  const auto bind = [this](void (AccessApi::*handler)(const HttpRequest&, HttpResponse&)) {
    return [this, handler](const HttpRequest& req, HttpResponse& res) {
      (this->*handler)(req, res);
    };
  };
  const std::string webhook = "/api/v1/webhooks/{id}";
  router.add("POST", webhook + "/tokens", bind(&AccessApi::createToken));
  router.add("GET", webhook + "/tokens", bind(&AccessApi::listTokens));
  router.add("DELETE", webhook + "/tokens/{id}", bind(&AccessApi::revokeToken));
  router.add("GET", "/api/v1/audit", bind(&AccessApi::listAudit));
  router.add("GET", webhook + "/audit", bind(&AccessApi::listWebhookAudit));
}

std::optional<std::string> AccessApi::existingWebhook(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRefOf(store_, req, res);
  if (!id) return std::nullopt;
  auto webhook = store_.getWebhook(*id);
  if (!webhook) {
    sendError(res, webhook.error());
    return std::nullopt;
  }
  return id;
}

void AccessApi::createToken(const HttpRequest& req, HttpResponse& res) {
  auto body = parseJsonObject(req, res);
  if (!body) return;
  auto id = existingWebhook(req, res);
  if (!id) return;
  if (auto r = refuseUnknownFields(*body, {"name", "scopes", "expires_at"}); !r)
    return sendError(res, r.error());
  auto name = stringField(*body, "name", kMaxNameLength);
  if (!name) return sendError(res, name.error());
  if (!name.value())
    return sendError(res, 400, error_code::kInvalidField, "name is required");
  auto scope = scopesField(*body);
  if (!scope) return sendError(res, scope.error());
  auto expires = expiryField(*body, store_.clock().now());
  if (!expires) return sendError(res, expires.error());
  const std::string token = newToken(kScopedTokenPrefix);
  AccessTokenRecord record;
  record.webhookId = *id;
  record.name = *name.value();
  record.scope = std::string(scopeWord(scope.value()));
  record.tokenSha256 = sha256Hex(token);
  record.expiresAt = expires.value();
  auto created = store_.createAccessToken(std::move(record));
  if (!created) return sendError(res, created.error());
  json view = tokenView(created.value());
  view["token"] = token;  // shown this once
  sendJson(res, 201, view);
}

void AccessApi::listTokens(const HttpRequest& req, HttpResponse& res) {
  auto id = existingWebhook(req, res);
  if (!id) return;
  auto tokens = store_.listAccessTokens(*id);
  if (!tokens) return sendError(res, tokens.error());
  json list = json::array();
  for (const AccessTokenRecord& t : tokens.value()) list.push_back(tokenView(t));
  sendJson(res, 200, {{"tokens", std::move(list)}});
}

void AccessApi::revokeToken(const HttpRequest& req, HttpResponse& res) {
  auto id = existingWebhook(req, res);
  if (!id) return;
  auto tokenId = pathId(req, res, 2, "token");
  if (!tokenId) return;
  auto revoked = store_.revokeAccessToken(*id, *tokenId);
  if (!revoked) return sendError(res, revoked.error());
  sendJson(res, 200, tokenView(revoked.value()));
}

void AccessApi::listAudit(const HttpRequest& req, HttpResponse& res) {
  sendAudit(req, res, std::nullopt);
}

void AccessApi::listWebhookAudit(const HttpRequest& req, HttpResponse& res) {
  auto id = existingWebhook(req, res);
  if (!id) return;
  sendAudit(req, res, id);
}

void AccessApi::sendAudit(const HttpRequest& req, HttpResponse& res,
                          const std::optional<std::string>& webhookId) {
  auto params = queryParams(req, {"limit", "before"});
  if (!params) return sendError(res, params.error());
  json query = json::object();
  for (const auto& [key, value] : params.value()) {
    const auto number = json::parse(value, nullptr, false);
    if (!number.is_number_integer())
      return sendError(res, 400, error_code::kInvalidParameter, key + " must be an integer");
    query[key] = number;
  }
  auto limit = intField(query, "limit", 1, kMaxAuditPage);
  if (!limit) return sendError(res, 400, error_code::kInvalidParameter, limit.error().message);
  auto before = intField(query, "before", 1, std::numeric_limits<int64_t>::max());
  if (!before) return sendError(res, 400, error_code::kInvalidParameter, before.error().message);
  const int64_t pageSize = limit.value().value_or(kDefaultAuditPage);
  auto rows = store_.listAudit(webhookId, before.value().value_or(0),
                               static_cast<int>(pageSize));
  if (!rows) return sendError(res, rows.error());
  json entries = json::array();
  for (const AuditRecord& a : rows.value()) entries.push_back(auditView(a));
  const bool more = static_cast<int64_t>(rows->size()) == pageSize;
  sendJson(res, 200, {{"entries", std::move(entries)},
                      {"next_before", more ? json(rows->back().id) : json()}});
}

void recordAudit(MainStore& store, const Router::Route& route, const HttpRequest& req,
                 const HttpResponse& res) {
  if (req.method == "GET" || req.method == "HEAD") return;
  if (route.access.need == RouteAccess::Need::kNone) return;
  if (res.status >= 400 && res.status < 500) return;
  // A read that posts (a routing preview) and a dry run change nothing.
  if (route.access.need == RouteAccess::Need::kWebhook && route.access.scope == Scope::kRead)
    return;
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_object() && body.contains("dry_run") && body["dry_run"] == true) return;
  AuditRecord record;
  record.actor = std::string(req.caller.actor());
  if (!req.caller.admin()) record.actorId = req.caller.id;
  record.method = req.method;
  record.route = route.pattern;
  json ids = json::array();
  for (size_t i = 1; i < req.matches.size(); ++i) ids.push_back(req.matches[i]);
  record.ids = ids.dump();
  record.fields = fieldNames(body).dump();
  record.status = res.status;
  // The webhook: the path's, by id or (the admin's) name, or a new one's.
  if (route.pattern.rfind("/api/v1/webhooks/{id}", 0) == 0) {
    const std::string& ref = req.matches[1];
    if (isUuid(ref)) {
      record.webhookId = normalizeUuid(ref);
    } else if (auto named = store.webhookIdsNamed(ref); named && named->size() == 1) {
      record.webhookId = named->front();
    }
  } else if (route.pattern == "/api/v1/webhooks" && res.status == 201) {
    const json created = json::parse(res.body, nullptr, false);
    if (created.is_object() && created.contains("id") && created["id"].is_string())
      record.webhookId = created["id"].get<std::string>();
  }
  if (auto r = store.appendAudit(std::move(record)); !r)
    spdlog::error("audit.record_failed method={} route={} error=\"{}\"", req.method,
                  route.pattern, r.error().message);
}

}  // namespace webhooker::server
