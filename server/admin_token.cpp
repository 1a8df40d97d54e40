#include "server/admin_token.h"

#include <cctype>

#include "base/secret.h"

namespace webhooker::server {

namespace {

constexpr const char* kSettingKey = "admin_token_sha256";
constexpr const char* kTokenPrefix = "whk_";
constexpr size_t kMinTokenLength = 16;

}  // namespace

Result<TokenSetup> ensureAdminToken(MainStore& store, const std::optional<std::string>& fixedToken) {
  if (fixedToken) {
    if (fixedToken->size() < kMinTokenLength)
      return makeError(error_code::kInvalidConfig,
                       "WEBHOOKER_ADMIN_TOKEN must be at least 16 characters");
    if (auto r = store.setSetting(kSettingKey, sha256Hex(*fixedToken)); !r) return r.error();
    return TokenSetup{};
  }
  auto stored = store.getSetting(kSettingKey);
  if (!stored) return stored.error();
  if (stored.value()) return TokenSetup{};
  auto token = resetAdminToken(store);
  if (!token) return token.error();
  return TokenSetup{std::move(token.value())};
}

Result<std::string> resetAdminToken(MainStore& store) {
  std::string token = newToken(kTokenPrefix);
  if (auto r = store.setSetting(kSettingKey, sha256Hex(token)); !r) return r.error();
  return token;
}

std::optional<std::string_view> bearerToken(std::string_view header) {
  constexpr std::string_view kBearer = "bearer ";
  if (header.size() <= kBearer.size()) return std::nullopt;
  for (size_t i = 0; i < kBearer.size(); ++i)  // the scheme name is case-insensitive
    if (std::tolower(static_cast<unsigned char>(header[i])) != kBearer[i]) return std::nullopt;
  return header.substr(kBearer.size());
}

bool AdminAuth::allows(std::string_view header) const {
  const auto token = bearerToken(header);
  if (!token) return false;
  // Hashing first makes both sides the same length, so the comparison time
  // says nothing about the token.
  auto stored = store_.getSetting(kSettingKey);
  if (!stored || !stored.value()) return false;
  return constantTimeEquals(sha256Hex(*token), *stored.value());
}

}  // namespace webhooker::server
