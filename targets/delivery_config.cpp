#include "targets/delivery_config.h"

#include <nlohmann/json.hpp>

#include "base/time_format.h"
#include "targets/webhook_signature.h"

namespace webhooker {

namespace {

using nlohmann::json;

Error unreadable(std::string message) { return makeError(error_code::kInvalidConfig, std::move(message)); }

const std::string* stringField(const json& config, const char* field) {
  const auto it = config.find(field);
  return it != config.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
}

DeliveryConfig readHttp(const json& config) {
  const std::string* urlText = stringField(config, "url");
  if (!urlText) return unreadable("the target has no valid url");
  auto url = parseHttpUrl(*urlText);
  if (!url) return unreadable("the target url is not a valid http(s) URL");
  HttpDeliveryConfig out;
  out.url = std::move(*url);
  if (const std::string* method = stringField(config, "method")) out.method = *method;
  if (const auto timeout = config.find("timeout_ms");
      timeout != config.end() && timeout->is_number_integer())
    out.timeout = std::chrono::milliseconds(timeout->get<int64_t>());
  if (const auto headers = config.find("headers"); headers != config.end() && headers->is_object())
    for (const auto& [name, value] : headers->items())
      if (value.is_string()) out.headers.emplace_back(name, value.get<std::string>());
  out.passForwardingHeaders = config.value("pass_forwarding_headers", json(false)) == true;
  if (config.contains("signing_secret")) {
    const std::string* secret = stringField(config, "signing_secret");
    if (!secret || !signingKey(*secret)) return unreadable("the target's signing secret is malformed");
    out.signingSecret = *secret;
    const std::string* previous = stringField(config, "previous_signing_secret");
    const std::string* expires = stringField(config, "previous_secret_expires_at");
    if (previous && expires) {
      if (!signingKey(*previous)) return unreadable("the target's signing secret is malformed");
      out.previousSigningSecret = *previous;
      out.previousSecretExpiresAt = parseTime(*expires);
    }
  }
  return out;
}

DeliveryConfig readSlack(const json& config) {
  const std::string* urlText = stringField(config, "webhook_url");
  if (!urlText) return unreadable("the slack target has no valid webhook_url");
  auto url = parseHttpUrl(*urlText);
  if (!url) return unreadable("the slack webhook_url is not a valid URL");
  return SlackDeliveryConfig{std::move(*url)};
}

}  // namespace

std::vector<std::string> HttpDeliveryConfig::signingSecretsAt(TimePoint now) const {
  std::vector<std::string> out;
  if (signingSecret.empty()) return out;
  out.push_back(signingSecret);
  if (!previousSigningSecret.empty() && previousSecretExpiresAt && now < *previousSecretExpiresAt)
    out.push_back(previousSigningSecret);
  return out;
}

DeliveryConfig readDeliveryConfig(std::string_view type, std::string_view configJson) {
  if (type != "http" && type != "slack") return std::monostate{};
  const json config = json::parse(configJson, nullptr, false);
  if (!config.is_object()) return unreadable("the target's config is not a JSON object");
  return type == "http" ? readHttp(config) : readSlack(config);
}

}  // namespace webhooker
