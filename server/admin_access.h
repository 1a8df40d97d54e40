// AccessApi: webhook-scoped tokens and the audit log (docs/api.md, *Access*).
//
//   POST   /api/v1/webhooks/{id}/tokens       {"name", "scopes", "expires_at"?}
//          201 with "token", shown this once (only its SHA-256 is kept)
//   GET    /api/v1/webhooks/{id}/tokens       without their values
//   DELETE /api/v1/webhooks/{id}/tokens/{id}  revoked at once; 200, the row
//   GET    /api/v1/audit                      every write, newest first
//   GET    /api/v1/webhooks/{id}/audit        that webhook's
//
// Who may call which is routeAccess() (server/router.cpp). recordAudit()
// is what the server calls after every write's handler.
// Threading: handlers run concurrently on the server's worker pool.
#pragma once

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "server/http_message.h"
#include "server/router.h"
#include "storage/main_store.h"

namespace webhooker::server {

class AccessApi {
 public:
  explicit AccessApi(MainStore& store) : store_(store) {}
  void registerRoutes(Router& router);

 private:
  void createToken(const HttpRequest& req, HttpResponse& res);
  void listTokens(const HttpRequest& req, HttpResponse& res);
  void revokeToken(const HttpRequest& req, HttpResponse& res);
  void listAudit(const HttpRequest& req, HttpResponse& res);
  void listWebhookAudit(const HttpRequest& req, HttpResponse& res);
  void sendAudit(const HttpRequest& req, HttpResponse& res,
                 const std::optional<std::string>& webhookId);
  // The webhook of the path (an id, or the admin's name for it), or nullopt
  // after a 404 or 409.
  std::optional<std::string> existingWebhook(const HttpRequest& req, HttpResponse& res);

  MainStore& store_;
};

// "scopes" of a request body: a non-empty list of "read", "operate",
// "manage"; the widest wins (each includes the ones before it).
// invalid_field otherwise.
Result<Scope> scopesField(const nlohmann::json& body);
// A scope with the ones it includes, as the API shows it: manage →
// ["read", "operate", "manage"].
nlohmann::json scopeList(Scope scope);

// Records a write (any method but GET and HEAD) to an /api/ route that its
// handler answered: who, the route, the path's ids, the names of the body's
// fields (never their values) and the status. A 4xx is not recorded: a
// refused request changes nothing, the audit log included; nor is a POST
// that only reads (a routing preview) or a dry run. A failure to
// record is logged; the write it describes stands.
void recordAudit(MainStore& store, const Router::Route& route, const HttpRequest& req,
                 const HttpResponse& res);

}  // namespace webhooker::server
