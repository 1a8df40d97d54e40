#include "targets/target_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "base/ascii_case.h"
#include "base/secret.h"
#include "base/time_format.h"
#include "base/url.h"
#include "targets/delivery_config.h"
#include "targets/egress.h"
#include "targets/queue_config.h"
#include "targets/webhook_signature.h"

namespace webhooker {

namespace {

using nlohmann::json;

constexpr const char* kRedacted = "[redacted]";
constexpr size_t kMaxUrlLength = 2048;

Error invalid(std::string message) { return makeError(error_code::kInvalidConfig, std::move(message)); }

Result<void> refuseUnknownFields(const json& config, std::initializer_list<std::string_view> known,
                                 TargetType type) {
  if (!config.is_object()) return invalid("config must be a JSON object");
  for (const auto& [key, value] : config.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end())
      return invalid(fmt::format("config.{} is not a field of a {} target", key,
                                     targetTypeWord(type)));
  }
  return {};
}

Result<void> checkUrl(const json& config, const char* field) {
  if (!config.contains(field)) return invalid(fmt::format("config.{} is required", field));
  const json& v = config.at(field);
  if (!v.is_string()) return invalid(fmt::format("config.{} must be a string", field));
  const std::string& text = v.get_ref<const std::string&>();
  if (text.size() > kMaxUrlLength)
    return invalid(fmt::format("config.{} is longer than {} characters", field, kMaxUrlLength));
  const auto url = parseHttpUrl(text);
  if (!url)
    return invalid(fmt::format("config.{} must be an absolute http:// or https:// URL", field));
  if (!url->userinfo.empty())
    return invalid(fmt::format("config.{} must not carry credentials; use headers", field));
  return {};
}

// Header names a sender must not set: they describe our connection to the
// receiver, not the event.
bool isReservedHeader(std::string_view name) {
  static constexpr std::array<std::string_view, 11> kReserved = {
      "host", "content-length", "connection", "keep-alive", "proxy-connection", "te",
      "trailer", "transfer-encoding", "upgrade", "proxy-authenticate", "expect"};
  const std::string l = asciiLower(name);
  return std::find(kReserved.begin(), kReserved.end(), l) != kReserved.end();
}

bool isTokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Configured headers whose values are shown back. Every other value is
// redacted: guessing credentials from words in a name missed X-Webhook-Pass,
// X-Client-Pw and X-Hmac, so only headers known to carry no secret are shown.
bool isShownHeader(std::string_view headerName) {
  static constexpr std::array<std::string_view, 5> kShown = {
      "content-type", "user-agent", "accept", "accept-language", "content-language"};
  return std::find(kShown.begin(), kShown.end(), asciiLower(headerName)) != kShown.end();
}

// config.oauth2 (targets/oauth2.h).
Result<void> checkOAuth2(const json& config) {
  if (!config.contains("oauth2")) return {};
  const json& oauth2 = config["oauth2"];
  if (!oauth2.is_object()) return invalid("config.oauth2 must be an object");
  for (const auto& [key, value] : oauth2.items()) {
    if (key != "token_url" && key != "client_id" && key != "client_secret" && key != "scope" &&
        key != "audience")
      return invalid(fmt::format("config.oauth2.{} is not an OAuth2 setting", key));
    if (!value.is_string() || value.get_ref<const std::string&>().size() > 4096)
      return invalid(fmt::format("config.oauth2.{} must be a string of at most 4096 characters", key));
  }
  if (auto r = checkUrl(oauth2, "token_url"); !r)
    return invalid("config.oauth2." + r.error().message.substr(std::string("config.").size()));
  for (const char* field : {"client_id", "client_secret"})
    if (oauth2.value(field, "").empty())
      return invalid(fmt::format("config.oauth2.{} is required", field));
  return {};
}

// config.proxy and config.tls (targets/egress.h).
Result<void> checkEgress(const json& config) {
  if (config.contains("proxy")) {
    const json& proxy = config["proxy"];
    if (!proxy.is_string() || proxy.get_ref<const std::string&>().size() > kMaxUrlLength)
      return invalid("config.proxy must be an http://host:port URL");
    if (auto r = parseProxyUrl(proxy.get_ref<const std::string&>()); !r)
      return invalid("config.proxy: " + r.error().message);
  }
  if (auto r = checkOAuth2(config); !r) return r.error();
  if (!config.contains("tls")) return {};
  const json& tls = config["tls"];
  if (!tls.is_object()) return invalid("config.tls must be an object");
  for (const auto& [key, value] : tls.items()) {
    if (key == "ca_bundle_only") {
      if (!value.is_boolean()) return invalid("config.tls.ca_bundle_only must be true or false");
    } else if (key == "ca_bundle" || key == "client_cert" || key == "client_key") {
      if (!value.is_string()) return invalid(fmt::format("config.tls.{} must be PEM text", key));
    } else {
      return invalid(fmt::format("config.tls.{} is not a TLS setting", key));
    }
  }
  if (!config["url"].get_ref<const std::string&>().starts_with("https:"))
    return invalid("config.tls needs an https:// url");
  const std::string ca = tls.value("ca_bundle", "");
  if (tls.contains("ca_bundle"))
    if (auto r = checkCaBundle(ca, "config.tls.ca_bundle"); !r) return r.error();
  if (tls.value("ca_bundle_only", false) && ca.empty())
    return invalid("config.tls.ca_bundle_only needs a ca_bundle");
  if (tls.contains("client_cert") || tls.contains("client_key"))
    if (auto r = checkClientCertificate(tls.value("client_cert", ""), tls.value("client_key", ""),
                                        "config.tls");
        !r)
      return r.error();
  return {};
}

Result<json> validateHttp(json config) {
  if (auto r = refuseUnknownFields(config,
                                   {"url", "method", "headers", "timeout_ms", "signing_secret",
                                    "previous_signing_secret", "previous_secret_expires_at",
                                    "pass_forwarding_headers", "proxy", "tls", "oauth2"},
                                   TargetType::kHttp);
      !r)
    return r.error();
  if (auto r = checkUrl(config, "url"); !r) return r.error();
  if (config.contains("pass_forwarding_headers") && !config["pass_forwarding_headers"].is_boolean())
    return invalid("config.pass_forwarding_headers must be true or false");

  if (!config.contains("method")) config["method"] = "POST";
  if (!config["method"].is_string()) return invalid("config.method must be a string");
  const std::string method = config["method"].get<std::string>();
  if (method != "POST" && method != "PUT" && method != "PATCH")
    return invalid("config.method must be POST, PUT or PATCH");

  if (!config.contains("headers")) config["headers"] = json::object();
  const json& headers = config["headers"];
  if (!headers.is_object()) return invalid("config.headers must be an object of strings");
  if (headers.size() > 64) return invalid("config.headers has more than 64 entries");
  for (const auto& [name, value] : headers.items()) {
    if (name.empty() || name.size() > 256 || !std::all_of(name.begin(), name.end(), isTokenChar))
      return invalid(fmt::format("config.headers has an invalid header name \"{}\"", name));
    if (isReservedHeader(name))
      return invalid(fmt::format("config.headers.{} is set by webhooker itself", name));
    if (!value.is_string())
      return invalid(fmt::format("config.headers.{} must be a string", name));
    const std::string& v = value.get_ref<const std::string&>();
    if (v.size() > 8192 || v.find_first_of("\r\n", 0) != std::string::npos ||
        v.find('\0') != std::string::npos)
      return invalid(fmt::format("config.headers.{} has an invalid value", name));
  }

  if (!config.contains("timeout_ms")) config["timeout_ms"] = kDefaultHttpTimeout.count();
  const json& timeout = config["timeout_ms"];
  if (!timeout.is_number_integer() || timeout.get<int64_t>() < 100 ||
      timeout.get<int64_t>() > 120000)
    return invalid("config.timeout_ms must be an integer from 100 to 120000");

  for (const char* field : {"signing_secret", "previous_signing_secret"}) {
    if (!config.contains(field)) continue;
    const json& secret = config[field];
    if (!secret.is_string() || !signingKey(secret.get_ref<const std::string&>()))
      return invalid(
          fmt::format("config.{} must be \"whsec_\" followed by base64 of 24-64 bytes", field));
  }
  if (config.contains("previous_signing_secret")) {
    if (!config.contains("signing_secret"))
      return invalid("config.previous_signing_secret needs a signing_secret");
    if (!config.contains("previous_secret_expires_at"))
      return invalid("config.previous_signing_secret needs previous_secret_expires_at");
  }
  if (config.contains("previous_secret_expires_at")) {
    const json& expires = config["previous_secret_expires_at"];
    if (!config.contains("previous_signing_secret"))
      return invalid("config.previous_secret_expires_at needs a previous_signing_secret");
    if (!expires.is_string() || !parseTime(expires.get_ref<const std::string&>()))
      return invalid("config.previous_secret_expires_at must be an ISO-8601 time");
  }
  if (auto r = checkEgress(config); !r) return r.error();
  return config;
}

Result<json> validateSlack(const json& config) {
  if (auto r = refuseUnknownFields(config, {"webhook_url"}, TargetType::kSlack); !r) return r.error();
  if (auto r = checkUrl(config, "webhook_url"); !r) return r.error();
  return config;
}

// A path segment that reads as a credential (the token of Discord, Teams or
// Slack-style URLs): 16 or more characters mixing letters and digits. Words,
// numeric ids and short codes stay readable.
bool looksLikeToken(std::string_view segment) {
  if (segment.size() < 16) return false;
  const bool digit = std::any_of(segment.begin(), segment.end(),
                                 [](unsigned char c) { return std::isdigit(c) != 0; });
  const bool letter = std::any_of(segment.begin(), segment.end(),
                                  [](unsigned char c) { return std::isalpha(c) != 0; });
  return digit && letter;
}

std::string redactPathTokens(std::string_view path) {
  std::string out;
  for (size_t start = 0; start <= path.size();) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view segment = path.substr(start, end - start);
    out += looksLikeToken(segment) ? std::string_view(kRedacted) : segment;
    if (end < path.size()) out += '/';
    start = end + 1;
  }
  return out;
}

std::string redactUrl(const std::string& text, bool hidePath) {
  const auto url = parseHttpUrl(text);
  if (!url) return kRedacted;
  std::string out = url->scheme + "://" + (url->ipv6Literal ? "[" + url->host + "]" : url->host);
  const bool defaultPort = url->port == (url->scheme == "https" ? 443 : 80);
  if (!defaultPort) out += ":" + std::to_string(url->port);
  if (hidePath) return out + "/" + kRedacted;
  const size_t q = url->target.find('?');
  const std::string_view path = std::string_view(url->target).substr(0, q);
  return out + redactPathTokens(path) + (q == std::string::npos ? "" : std::string("?") + kRedacted);
}

// A proxy URL's credentials go; its host and port stay.
std::string redactProxy(const std::string& text) {
  const auto proxy = parseProxyUrl(text);
  if (!proxy) return kRedacted;
  return std::string("http://") + (proxy->authorization.empty() ? "" : "[redacted]@") +
         proxy->display();
}

}  // namespace

Result<json> validateTargetConfig(TargetType type, const json& config) {
  switch (type) {
    case TargetType::kHttp: return validateHttp(config);
    case TargetType::kSlack: return validateSlack(config);
    case TargetType::kDatabase:
    case TargetType::kLog:
    case TargetType::kPull:
      if (auto r = refuseUnknownFields(config, {}, type); !r) return r.error();
      return config;
    case TargetType::kRedisStream:
    case TargetType::kNats:
    case TargetType::kAmqp: return validateQueueConfig(type, config);
  }
  return invalid("unknown target type");  // not reached: the switch names every type
}

json redactTargetConfig(TargetType type, const json& config) {
  if (isQueueTargetType(type)) return redactQueueConfig(config);
  json out = config;
  if (type == TargetType::kHttp) {
    if (out.contains("url") && out["url"].is_string())
      out["url"] = redactUrl(out["url"].get<std::string>(), false);
    for (const char* field : {"signing_secret", "previous_signing_secret"})
      if (out.contains(field)) out[field] = kRedacted;
    if (out.contains("headers") && out["headers"].is_object())
      for (auto& [name, value] : out["headers"].items())
        if (!isShownHeader(name)) value = kRedacted;
    if (out.contains("proxy") && out["proxy"].is_string())
      out["proxy"] = redactProxy(out["proxy"].get<std::string>());
    if (out.contains("oauth2") && out["oauth2"].is_object() && out["oauth2"].contains("client_secret"))
      out["oauth2"]["client_secret"] = kRedacted;
    if (out.contains("tls") && out["tls"].is_object())
      for (const char* field : {"client_cert", "client_key"})
        if (out["tls"].contains(field)) out["tls"][field] = kRedacted;
  } else if (type == TargetType::kSlack) {
    if (out.contains("webhook_url") && out["webhook_url"].is_string())
      out["webhook_url"] = redactUrl(out["webhook_url"].get<std::string>(), true);
  }
  return out;
}

void applySigningRotation(const json& before, const json& patch, json& merged, TimePoint now) {
  if (!merged.is_object()) return;
  const json* patchConfig =
      patch.is_object() && patch.contains("config") && patch["config"].is_object()
          ? &patch["config"]
          : nullptr;
  const auto named = [&](const char* field) {
    return patchConfig != nullptr && patchConfig->contains(field);
  };
  // No signing, nothing to roll over to: the previous secret would be
  // refused by validation, and it means nothing any more.
  if (!merged.contains("signing_secret")) {
    if (!named("previous_signing_secret")) merged.erase("previous_signing_secret");
    if (!named("previous_secret_expires_at")) merged.erase("previous_secret_expires_at");
    return;
  }
  const bool replaced = before.is_object() && before.contains("signing_secret") &&
                        before["signing_secret"] != merged["signing_secret"];
  if (replaced && !named("previous_signing_secret")) {
    merged["previous_signing_secret"] = before["signing_secret"];
    if (!named("previous_secret_expires_at")) merged.erase("previous_secret_expires_at");
  }
  if (merged.contains("previous_signing_secret") && !merged.contains("previous_secret_expires_at"))
    merged["previous_secret_expires_at"] = formatTime(now + kSigningRotationGrace);
}

Result<RetryPolicy> applyRetryPolicy(const json& retry, RetryPolicy policy) {
  auto bad = [](std::string m) { return makeError(error_code::kInvalidRetry, std::move(m)); };
  if (!retry.is_object()) return bad("retry must be a JSON object");
  for (const auto& [key, value] : retry.items()) {
    if (key == "jitter") {
      if (!value.is_number()) return bad("retry.jitter must be a number");
      policy.jitter = value.get<double>();
      continue;
    }
    if (key != "max_retries" && key != "base_delay_ms" && key != "max_delay_ms")
      return bad(fmt::format("retry.{} is not a retry policy field", key));
    if (!value.is_number_integer()) return bad(fmt::format("retry.{} must be an integer", key));
    const int64_t n = value.get<int64_t>();
    if (key == "max_retries") {
      if (n < 0 || n > 20) return bad("retry.max_retries must be from 0 to 20");
      policy.maxRetries = static_cast<int>(n);
    } else if (key == "base_delay_ms") {
      policy.baseDelayMs = n;
    } else {
      policy.maxDelayMs = n;
    }
  }
  if (policy.baseDelayMs < 100 || policy.baseDelayMs > 3'600'000)
    return bad("retry.base_delay_ms must be from 100 to 3600000");
  if (policy.maxDelayMs < policy.baseDelayMs || policy.maxDelayMs > 86'400'000)
    return bad("retry.max_delay_ms must be from base_delay_ms to 86400000");
  if (!(policy.jitter >= 0.0 && policy.jitter <= 0.9))
    return bad("retry.jitter must be from 0 to 0.9");
  return policy;
}

json retryPolicyJson(const RetryPolicy& p) {
  return {{"max_retries", p.maxRetries},
          {"base_delay_ms", p.baseDelayMs},
          {"max_delay_ms", p.maxDelayMs},
          {"jitter", p.jitter}};
}

}  // namespace webhooker
