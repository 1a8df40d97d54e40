// AccessControl: who an /api/ request comes from, and whether that caller
// may call its route (the table is routeAccess() in server/router.cpp;
// the model is in docs/security.md, *Access model*).
//
// A caller is the admin (the admin token), a webhook-scoped token
// ("Bearer wht_..."), or a portal session (its cookie, when the request has
// no Authorization header). Tokens are looked
// up by their SHA-256; a revoked or expired one names nobody. A scoped
// caller asking for another webhook's path gets 404, as if it did not
// exist; a route outside its scope 403.
// Threading: any thread; every check reads the main DB, so a revocation
// holds from the next request on.
#pragma once

#include <optional>

#include "server/access.h"
#include "server/admin_token.h"
#include "server/http_message.h"
#include "storage/main_store.h"

namespace webhooker::server {

// "wht_": a webhook-scoped token, recognisable in a scan.
inline constexpr std::string_view kScopedTokenPrefix = "wht_";

class AccessControl {
 public:
  explicit AccessControl(MainStore& store) : store_(store), admin_(store) {}

  // The caller the request's credentials name; Kind::kNone when they name
  // nobody (also when the store cannot be read: never open on an error).
  Caller authenticate(const HttpRequest& req) const;

  // nullopt when req.caller may call a route that needs `access` (the admin
  // always may); otherwise the refusal to send. Runs before the body is
  // read; a route with operateIfOnly is allowed here for an operate caller
  // and checked again by bodyRefusal() once the body is in.
  std::optional<HttpResponse> refusal(const RouteAccess& access, const HttpRequest& req) const;
  std::optional<HttpResponse> bodyRefusal(const RouteAccess& access, const HttpRequest& req) const;

 private:
  // The portal session of the request's cookie (server/admin_portal.h),
  // when it sends no Authorization header.
  Caller portalCaller(const HttpRequest& req) const;

  MainStore& store_;
  const AdminAuth admin_;
};

}  // namespace webhooker::server
