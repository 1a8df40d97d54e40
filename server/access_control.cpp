#include "server/access_control.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "base/secret.h"
#include "base/time_format.h"
#include "base/uuid.h"
#include "server/admin_portal.h"
#include "server/json_io.h"

namespace webhooker::server {

namespace {

// The webhook a route's path names (matches[1]) is the caller's own. Only
// an id counts: a scoped caller never resolves names, which could tell it
// about other webhooks.
bool ownWebhook(const HttpRequest& req, const Caller& caller) {
  if (req.matches.size() < 2 || !isUuid(req.matches[1])) return false;
  return normalizeUuid(req.matches[1]) == caller.webhookId;
}

bool namesWebhook(const HttpRequest& req) {
  return req.path.rfind("/api/v1/webhooks/", 0) == 0 && req.matches.size() >= 2;
}

HttpResponse forbidden(const Caller& caller) {
  return errorResponse(403, error_code::kForbidden,
                       "this " + std::string(caller.actor()) + " (scope " +
                           std::string(scopeWord(caller.scope)) + ") may not call this route");
}

}  // namespace

Caller AccessControl::authenticate(const HttpRequest& req) const {
  const std::string header = req.get_header_value("Authorization");
  if (admin_.allows(header)) {
    Caller admin;
    admin.kind = Caller::Kind::kAdmin;
    return admin;
  }
  if (header.empty()) return portalCaller(req);
  const auto token = bearerToken(header);
  if (!token || token->rfind(kScopedTokenPrefix, 0) != 0) return {};
  auto found = store_.findAccessToken(sha256Hex(*token));
  if (!found) {
    spdlog::warn("admin.token_lookup_failed error=\"{}\"", found.error().message);
    return {};
  }
  if (!found.value()) return {};
  const AccessTokenRecord& record = *found.value();
  if (record.revokedAt) return {};
  if (record.expiresAt && *record.expiresAt <= formatTime(store_.clock().now())) return {};
  const auto scope = parseScope(record.scope);
  if (!scope) return {};
  return Caller{Caller::Kind::kToken, record.id, record.webhookId, *scope};
}

Caller AccessControl::portalCaller(const HttpRequest& req) const {
  const std::string session = cookieValue(req, kPortalCookie);
  if (session.empty()) return {};
  auto found = store_.findPortalSession(sha256Hex(session));
  if (!found) {
    spdlog::warn("admin.portal_lookup_failed error=\"{}\"", found.error().message);
    return {};
  }
  if (!found.value()) return {};
  const auto scope = parseScope(found.value()->scope);
  if (!scope) return {};
  return Caller{Caller::Kind::kPortal, found.value()->id, found.value()->webhookId, *scope};
}

std::optional<HttpResponse> AccessControl::refusal(const RouteAccess& access,
                                                   const HttpRequest& req) const {
  const Caller& caller = req.caller;
  if (caller.admin() || access.need == RouteAccess::Need::kNone) return std::nullopt;
  // Another webhook's path is answered as if nothing had that id, whatever
  // the route: no oracle for which webhooks exist.
  if (namesWebhook(req) && !ownWebhook(req, caller))
    return errorResponse(404, error_code::kNotFound, "no such webhook");
  if (access.need == RouteAccess::Need::kAdmin) return forbidden(caller);
  if (caller.scope >= access.scope) return std::nullopt;
  if (!access.operateIfOnly.empty() && caller.scope >= Scope::kOperate) return std::nullopt;
  return forbidden(caller);
}

std::optional<HttpResponse> AccessControl::bodyRefusal(const RouteAccess& access,
                                                       const HttpRequest& req) const {
  const Caller& caller = req.caller;
  if (caller.admin() || access.need != RouteAccess::Need::kWebhook ||
      caller.scope >= access.scope)
    return std::nullopt;
  // Here only through operateIfOnly: every field of the body must be one of
  // those operate may change.
  const auto body = nlohmann::json::parse(req.body, nullptr, false);
  if (!body.is_object() || body.empty()) return forbidden(caller);
  const std::string_view allowed = access.operateIfOnly;
  for (const auto& item : body.items()) {
    const std::string& key = item.key();
    bool listed = false;
    for (size_t at = 0; at < allowed.size();) {
      const size_t end = std::min(allowed.find(' ', at), allowed.size());
      if (allowed.substr(at, end - at) == key) listed = true;
      at = end + 1;
    }
    if (!listed) return forbidden(caller);
  }
  return std::nullopt;
}

}  // namespace webhooker::server
