// The admin API's bearer token. Only its SHA-256 is stored (settings key
// "admin_token_sha256"); the plain token exists once, when it is made.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "storage/main_store.h"

namespace webhooker::server {

struct TokenSetup {
  std::optional<std::string> generated;  // set only when a new token was made
};

// Makes sure a token is configured: `fixedToken` (WEBHOOKER_ADMIN_TOKEN)
// replaces the stored hash; otherwise a stored hash is kept; otherwise a new
// random token is generated, stored hashed and returned for printing once.
Result<TokenSetup> ensureAdminToken(MainStore& store, const std::optional<std::string>& fixedToken);

// Replaces the token with a new random one and returns it.
Result<std::string> resetAdminToken(MainStore& store);

// The token of an "Authorization: Bearer <token>" header (the scheme's
// name in any case); nullopt for any other header.
std::optional<std::string_view> bearerToken(std::string_view authorizationHeader);

// Checks "Bearer <token>" against the stored hash in constant time. Reads
// the hash on every check, so `webhooker admin-token --reset` takes effect
// on a running daemon at once.
class AdminAuth {
 public:
  explicit AdminAuth(MainStore& store) : store_(store) {}

  // False also when the hash cannot be read: never open on a storage error.
  bool allows(std::string_view authorizationHeader) const;

 private:
  MainStore& store_;
};

}  // namespace webhooker::server
