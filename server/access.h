// Who may call an admin route (docs/security.md, *Access model*).
//
// The admin token reaches everything. A webhook-scoped token (or a portal
// session) reaches its one webhook's routes within its scope: read < operate
// < manage. What each route needs is one table, in server/router.cpp
// (routeAccess); a route under /api/ missing from it needs the admin token.
// Plain values; no shared state.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace webhooker::server {

enum class Scope { kRead = 1, kOperate = 2, kManage = 3 };

std::optional<Scope> parseScope(std::string_view word);
std::string_view scopeWord(Scope scope);

// What a route asks of its caller.
struct RouteAccess {
  enum class Need {
    kNone,     // no token: outside /api/ (ingest, health, the console, /metrics with its
               // own auth) and a portal link's exchange
    kAdmin,    // the admin token only
    kWebhook,  // the admin token, or a caller of the webhook in matches[1] with `scope`
  };
  Need need = Need::kAdmin;
  Scope scope = Scope::kManage;
  // Set: a body whose top-level fields are all among these (space-separated)
  // needs only operate (PATCH of a target's "active" or "state").
  std::string_view operateIfOnly;
};

// Who made an admin request, once authenticated.
struct Caller {
  enum class Kind { kNone, kAdmin, kToken, kPortal };
  Kind kind = Kind::kNone;
  std::string id;         // the token's or portal link's id
  std::string webhookId;  // the one webhook a token or portal session reaches
  Scope scope = Scope::kRead;

  bool admin() const { return kind == Kind::kAdmin; }
  // The audit log's word for the kind: admin, token or portal.
  std::string_view actor() const;
};

}  // namespace webhooker::server
