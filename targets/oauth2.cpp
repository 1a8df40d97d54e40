#include "targets/oauth2.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

#include "base/secret.h"

namespace webhooker {

namespace {

// application/x-www-form-urlencoded (RFC 6749 appendix B).
std::string formEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') out.push_back(static_cast<char>(c));
    else if (c == ' ') out.push_back('+');
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

// Printable and short: a token endpoint's words for the attempt's error.
std::string printable(const std::string& text, size_t max) {
  std::string out = text.substr(0, max);
  std::replace_if(out.begin(), out.end(), [](char c) { return c < 0x20 || c > 0x7e; }, '?');
  return out;
}

}  // namespace

std::string tokenRequestBody(const OAuth2Settings& s) {
  std::string body = "grant_type=client_credentials";
  if (!s.scope.empty()) body += "&scope=" + formEncode(s.scope);
  if (!s.audience.empty()) body += "&audience=" + formEncode(s.audience);
  return body;
}

std::string tokenRequestAuthorization(const OAuth2Settings& s) {
  // client_secret_basic: each part form-encoded first (RFC 6749 §2.3.1).
  return "Basic " + base64Encode(formEncode(s.clientId) + ":" + formEncode(s.clientSecret));
}

TokenAnswer readTokenAnswer(int status, const std::string& body) {
  TokenAnswer out;
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (status != 200) {
    // RFC 6749 §5.2: {"error": "invalid_client", "error_description": ...}
    std::string detail;
    if (j.is_object() && j.contains("error") && j["error"].is_string()) {
      detail = ": " + printable(j["error"].get<std::string>(), 64);
      if (j.contains("error_description") && j["error_description"].is_string())
        detail += " (" + printable(j["error_description"].get<std::string>(), 160) + ")";
    }
    out.problem = fmt::format("OAuth2: the token endpoint answered {}{}", status, detail);
    return out;
  }
  if (!j.is_object() || !j.contains("access_token") || !j["access_token"].is_string() ||
      j["access_token"].get_ref<const std::string&>().empty()) {
    out.problem = "OAuth2: the token endpoint's answer has no access_token";
    return out;
  }
  const std::string& token = j["access_token"].get_ref<const std::string&>();
  if (token.size() > 16384 ||
      std::any_of(token.begin(), token.end(), [](char c) { return c < 0x21 || c > 0x7e; })) {
    out.problem = "OAuth2: the token endpoint's access_token is not a usable bearer token";
    return out;
  }
  if (j.contains("token_type") && j["token_type"].is_string()) {
    std::string type = j["token_type"].get<std::string>();
    std::transform(type.begin(), type.end(), type.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (type != "bearer") {
      out.problem = "OAuth2: the token endpoint gave a " + printable(type, 32) +
                    " token; only bearer tokens are sent";
      return out;
    }
  }
  out.accessToken = token;
  out.lifetime = kAssumedLifetime;
  if (j.contains("expires_in") && j["expires_in"].is_number() && j["expires_in"].get<double>() > 0)
    out.lifetime = std::chrono::seconds(
        static_cast<int64_t>(std::min(j["expires_in"].get<double>(), 31'536'000.0)));
  return out;
}

std::shared_ptr<TokenCache::Slot> TokenCache::slot(const std::string& key) {
  MutexLock lock(mutex_);
  auto& slot = slots_[key];
  if (!slot) slot = std::make_shared<Slot>();
  return slot;
}

std::optional<std::string> TokenCache::current(Slot& slot) const {
  MutexLock lock(slot.mutex);
  if (slot.token.empty() || clock_.now() >= slot.refreshAt) return std::nullopt;
  return slot.token;
}

void TokenCache::keep(Slot& slot, const std::string& token, std::chrono::seconds lifetime) const {
  const auto early = std::min<std::chrono::seconds>(lifetime / 10, std::chrono::seconds(60));
  MutexLock lock(slot.mutex);
  slot.token = token;
  slot.refreshAt = clock_.now() + (lifetime - early);
}

void TokenCache::drop(Slot& slot, const std::string& token) const {
  MutexLock lock(slot.mutex);
  if (slot.token == token) slot.token.clear();
}

}  // namespace webhooker
