#include "server/admin_portal.h"

#include <nlohmann/json.hpp>

#include "base/secret.h"
#include "base/time_format.h"
#include "server/admin_access.h"
#include "server/admin_api.h"
#include "server/json_io.h"
#include "server/request_fields.h"

namespace webhooker::server {

namespace {

using nlohmann::json;

// "whp_": a portal link's secret, recognisable in a scan.
constexpr std::string_view kLinkPrefix = "whp_";

// "scopes" of a new link: absent gives the caller's own; a wider one than
// the caller's is refused (403).
std::optional<Scope> linkScope(const json& body, const Caller& caller, HttpResponse& res) {
  const Scope own = caller.admin() ? Scope::kManage : caller.scope;
  if (!body.contains("scopes")) return own;
  auto asked = scopesField(body);
  if (!asked) {
    sendError(res, asked.error());
    return std::nullopt;
  }
  if (asked.value() > own) {
    sendError(res, 403, error_code::kForbidden, "a link cannot have a wider scope than its maker");
    return std::nullopt;
  }
  return asked.value();
}

}  // namespace

std::string cookieValue(const HttpRequest& req, std::string_view name) {
  for (size_t i = 0; i < req.get_header_value_count("Cookie"); ++i) {
    const std::string header = req.get_header_value("Cookie", i);
    std::string_view rest = header;
    while (!rest.empty()) {
      const size_t end = std::min(rest.find(';'), rest.size());
      std::string_view pair = rest.substr(0, end);
      rest.remove_prefix(std::min(end + 1, rest.size()));
      while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
      const size_t eq = pair.find('=');
      if (eq != std::string_view::npos && pair.substr(0, eq) == name)
        return std::string(pair.substr(eq + 1));
    }
  }
  return "";
}

void PortalApi::registerRoutes(Router& router) {
  const auto bind = [this](void (PortalApi::*handler)(const HttpRequest&, HttpResponse&)) {
    return [this, handler](const HttpRequest& req, HttpResponse& res) {
      (this->*handler)(req, res);
    };
  };
  router.add("POST", "/api/v1/webhooks/{id}/portal-links", bind(&PortalApi::createLink));
  router.add("POST", "/api/v1/portal/session", bind(&PortalApi::startSession));
  router.add("DELETE", "/api/v1/portal/session", bind(&PortalApi::endSession));
}

void PortalApi::createLink(const HttpRequest& req, HttpResponse& res) {
  auto body = req.body.empty() ? std::optional<json>(json::object()) : parseJsonObject(req, res);
  if (!body) return;
  auto id = webhookRefOf(store_, req, res);
  if (!id) return;
  if (auto webhook = store_.getWebhook(*id); !webhook) return sendError(res, webhook.error());
  if (auto r = refuseUnknownFields(*body, {"scopes"}); !r) return sendError(res, r.error());
  const auto scope = linkScope(*body, req.caller, res);
  if (!scope) return;
  const std::string secret = newToken(kLinkPrefix);
  PortalLinkRecord link;
  link.webhookId = *id;
  link.scope = std::string(scopeWord(*scope));
  link.secretSha256 = sha256Hex(secret);
  link.expiresAt = formatTime(store_.clock().now() + linkLifetime_);
  auto created = store_.createPortalLink(std::move(link));
  if (!created) return sendError(res, created.error());
  // A fragment: the secret is not sent to the server when the page loads,
  // so it is in no access log or Referer.
  sendJson(res, 201,
           {{"id", created->id},
            {"url", "/#/portal/" + secret},
            {"scopes", scopeList(*scope)},
            {"expires_at", created->expiresAt}});
}

void PortalApi::startSession(const HttpRequest& req, HttpResponse& res) {
  auto body = parseJsonObject(req, res);
  if (!body) return;
  if (auto r = refuseUnknownFields(*body, {"link"}); !r) return sendError(res, r.error());
  auto secret = stringField(*body, "link", 200);
  if (!secret) return sendError(res, secret.error());
  if (!secret.value()) return sendError(res, 400, error_code::kInvalidField, "link is required");
  const std::string session = newToken("whs_");
  const std::string ends = formatTime(store_.clock().now() + kSessionLifetime);
  auto link = store_.exchangePortalLink(sha256Hex(*secret.value()), sha256Hex(session), ends);
  if (!link) return sendError(res, link.error());
  if (!link.value())
    return sendError(res, 401, error_code::kInvalidPortalLink,
                     "this portal link is unknown, expired or already used; ask for a new one");
  // Behind a TLS-terminating proxy the cookie is sent over TLS only.
  const bool tls = req.get_header_value("X-Forwarded-Proto") == "https";
  res.set_header("Set-Cookie", std::string(kPortalCookie) + "=" + session +
                                   "; Path=/api/; HttpOnly; SameSite=Strict; Max-Age=" +
                                   std::to_string(std::chrono::seconds(kSessionLifetime).count()) +
                                   (tls ? "; Secure" : ""));
  sendJson(res, 200,
           {{"webhook_id", link.value()->webhookId},
            {"scopes", scopeList(parseScope(link.value()->scope).value_or(Scope::kRead))},
            {"expires_at", ends}});
}

void PortalApi::endSession(const HttpRequest& req, HttpResponse& res) {
  const std::string session = cookieValue(req, kPortalCookie);
  if (!session.empty())
    if (auto r = store_.endPortalSession(sha256Hex(session)); !r) return sendError(res, r.error());
  res.set_header("Set-Cookie", std::string(kPortalCookie) +
                                   "=; Path=/api/; HttpOnly; SameSite=Strict; Max-Age=0");
  res.status = 204;
}

}  // namespace webhooker::server
