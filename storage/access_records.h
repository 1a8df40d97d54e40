// The rows of access control in the main database: webhook-scoped tokens
// and the audit log of admin API writes (migrations/main/0009_access.sql).
// Times are the stored ISO-8601 text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace webhooker {

struct AccessTokenRecord {
  std::string id;
  std::string webhookId;
  std::string name;
  std::string scope;        // read | operate | manage
  std::string tokenSha256;  // the token itself is never stored
  std::string createdAt;
  std::optional<std::string> expiresAt;
  std::optional<std::string> revokedAt;
};

// A portal link and, once its secret was exchanged, the session it became.
struct PortalLinkRecord {
  std::string id;
  std::string webhookId;
  std::string scope;          // read | operate | manage
  std::string secretSha256;   // the link's secret is never stored
  std::string createdAt;
  std::string expiresAt;      // the secret is refused after this
  std::optional<std::string> usedAt;            // set once: the secret works once
  std::optional<std::string> sessionExpiresAt;  // the cookie's session ends then
};

struct AuditRecord {
  int64_t id = 0;  // set by the store
  std::string at;  // set by the store
  std::string actor;  // admin | token | portal
  std::optional<std::string> actorId;
  std::optional<std::string> webhookId;
  std::string method;
  std::string route;   // the route's pattern, "/api/v1/webhooks/{id}/targets"
  std::string ids;     // JSON array: the path's ids, in order
  std::string fields;  // JSON array: the names of the body's top-level fields
  int status = 0;
};

}  // namespace webhooker
