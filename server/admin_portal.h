// PortalApi: portal links, which open the console limited to one webhook
// (docs/security.md, *Portal links*).
//
//   POST   /api/v1/webhooks/{id}/portal-links  {"scopes"?}  admin or manage
//          201 {"id", "url", "scopes", "expires_at"}: the URL is valid for
//          the link lifetime (--portal-link-minutes) and works once
//   POST   /api/v1/portal/session  {"link"}  no token: the link's secret is
//          exchanged for a session cookie (HttpOnly, SameSite=Strict; Secure
//          when the request came over TLS through a proxy)
//   DELETE /api/v1/portal/session  ends the session of the cookie sent
//
// A portal session is a caller like a scoped token (server/access_control.h).
// Threading: handlers run concurrently on the server's worker pool.
#pragma once

#include <chrono>

#include "server/http_message.h"
#include "server/router.h"
#include "storage/main_store.h"

namespace webhooker::server {

// The session cookie's name.
inline constexpr std::string_view kPortalCookie = "wh_portal";

class PortalApi {
 public:
  static constexpr std::chrono::minutes kDefaultLinkLifetime{15};
  // How long a session lasts once a link was exchanged.
  static constexpr std::chrono::hours kSessionLifetime{1};

  PortalApi(MainStore& store, std::chrono::minutes linkLifetime)
      : store_(store), linkLifetime_(linkLifetime) {}
  void registerRoutes(Router& router);

 private:
  void createLink(const HttpRequest& req, HttpResponse& res);
  void startSession(const HttpRequest& req, HttpResponse& res);
  void endSession(const HttpRequest& req, HttpResponse& res);

  MainStore& store_;
  const std::chrono::minutes linkLifetime_;
};

// The value of cookie `name` in the request's Cookie headers; "" when absent.
std::string cookieValue(const HttpRequest& req, std::string_view name);

}  // namespace webhooker::server
