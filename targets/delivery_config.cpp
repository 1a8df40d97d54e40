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

std::string textField(const json& object, const char* field) {
  const std::string* value = stringField(object, field);
  return value ? *value : std::string();
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
  if (config.contains("proxy") || config.contains("tls") || config.contains("oauth2")) {
    EgressOptions egress;
    if (const std::string* proxy = stringField(config, "proxy")) {
      auto parsed = parseProxyUrl(*proxy);
      if (!parsed) return unreadable("the target's proxy is not a valid proxy URL");
      egress.proxy = std::move(parsed.value());
    }
    if (const auto tls = config.find("tls"); tls != config.end() && tls->is_object()) {
      const auto text = [&](const char* field) { return textField(*tls, field); };
      egress.tls.caBundle = text("ca_bundle");
      egress.tls.caBundleOnly = tls->value("ca_bundle_only", json(false)) == true;
      egress.tls.clientCert = text("client_cert");
      egress.tls.clientKey = text("client_key");
    }
    if (const auto oauth2 = config.find("oauth2"); oauth2 != config.end() && oauth2->is_object()) {
      const auto text = [&](const char* field) { return textField(*oauth2, field); };
      auto tokenUrl = parseHttpUrl(text("token_url"));
      if (!tokenUrl) return unreadable("the target's oauth2.token_url is not a valid URL");
      egress.oauth2 = OAuth2Settings{std::move(*tokenUrl), text("client_id"),
                                     text("client_secret"), text("scope"), text("audience"), ""};
    }
    out.egress = sealEgress(std::move(egress));
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

// A queue target's config, or the error its attempts record.
template <typename Config>
DeliveryConfig readQueue(Result<Config> read) {
  if (!read) return read.error();
  return std::move(read.value());
}

DeliveryConfig readDeliveryConfig(TargetType type, std::string_view configJson) {
  if (type == TargetType::kDatabase || type == TargetType::kLog || type == TargetType::kPull)
    return std::monostate{};
  const json config = json::parse(configJson, nullptr, false);
  if (!config.is_object()) return unreadable("the target's config is not a JSON object");
  switch (type) {
    case TargetType::kHttp: return readHttp(config);
    case TargetType::kSlack: return readSlack(config);
    case TargetType::kRedisStream: return readQueue(readRedisStreamConfig(config));
    case TargetType::kNats: return readQueue(readNatsConfig(config));
    case TargetType::kAmqp: return readQueue(readAmqpConfig(config));
    case TargetType::kDatabase:
    case TargetType::kLog:
    case TargetType::kPull: break;
  }
  return std::monostate{};
}

}  // namespace webhooker
