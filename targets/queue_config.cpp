#include "targets/queue_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace webhooker {

namespace {

using nlohmann::json;

constexpr const char* kRedacted = "[redacted]";
constexpr size_t kMaxUrlLength = 2048;
constexpr size_t kMaxNameLength = 255;
constexpr size_t kMaxSecretLength = 1024;

Error invalid(std::string message) {
  return makeError(error_code::kInvalidConfig, std::move(message));
}

struct Scheme {
  std::string_view name;
  bool tls;
  int defaultPort;
};

// The schemes each type takes. Debian 12's hiredis (0.14) has no TLS, so a
// redis_stream target has no rediss://.
std::vector<Scheme> schemesOf(TargetType type) {
  switch (type) {
    case TargetType::kRedisStream: return {{"redis", false, 6379}};
    case TargetType::kNats: return {{"nats", false, 4222}, {"tls", true, 4222}};
    case TargetType::kAmqp: return {{"amqp", false, 5672}, {"amqps", true, 5671}};
    default: return {};
  }
}

std::string percentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// The broker address in `text`, or the reason it is refused.
Result<BrokerAddress> parseBrokerUrl(TargetType type, const std::string& text) {
  const size_t colon = text.find("://");
  const std::vector<Scheme> schemes = schemesOf(type);
  std::string names;
  for (const Scheme& s : schemes) names += (names.empty() ? "" : " or ") + std::string(s.name) + "://";
  if (colon == std::string::npos)
    return invalid(fmt::format("config.url must be a {} URL", names));
  std::string scheme = text.substr(0, colon);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (type == TargetType::kRedisStream && scheme == "rediss")
    return invalid("config.url: rediss:// (TLS) is not supported: the hiredis of Debian 12 "
                   "(0.14) has no TLS; use redis:// over a trusted network or a TLS tunnel");
  const auto known = std::find_if(schemes.begin(), schemes.end(),
                                  [&](const Scheme& s) { return s.name == scheme; });
  if (known == schemes.end()) return invalid(fmt::format("config.url must be a {} URL", names));
  // The host and port parse like an http URL's (the same strict rules);
  // parsed with both default ports, a port the URL does not name shows up
  // as a difference.
  const std::string rest = text.substr(colon);
  auto asHttp = parseHttpUrl("http" + rest);
  auto asHttps = parseHttpUrl("https" + rest);
  if (!asHttp || !asHttps)
    return invalid(fmt::format("config.url must be a {} URL with a host", names));
  if (!asHttp->userinfo.empty())
    return invalid("config.url must not carry credentials; use username and password");
  BrokerAddress out;
  out.url = std::move(*asHttp);
  out.url.scheme = scheme;
  out.tls = known->tls;
  if (out.url.port != asHttps->port) out.url.port = known->defaultPort;
  const std::string& target = out.url.target;
  if (target.find('?') != std::string::npos)
    return invalid("config.url must not have a query");
  if (type == TargetType::kAmqp) {
    out.vhost = target.size() <= 1 ? "/" : percentDecode(target.substr(1));
    if (out.vhost.empty() || out.vhost.size() > kMaxNameLength)
      return invalid("config.url names an invalid virtual host");
  } else if (target != "/") {
    return invalid("config.url must not have a path");
  }
  return out;
}

// A string field (empty when absent). Messages name the field, never its
// value: some of these are secrets.
Result<std::string> optionalString(const json& config, const char* field, size_t maxLength) {
  const auto it = config.find(field);
  if (it == config.end()) return std::string();
  if (!it->is_string()) return invalid(fmt::format("config.{} must be a string", field));
  const std::string& v = it->get_ref<const std::string&>();
  if (v.size() > maxLength)
    return invalid(fmt::format("config.{} is longer than {} characters", field, maxLength));
  const bool control = std::any_of(v.begin(), v.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
  if (control) return invalid(fmt::format("config.{} must not hold control characters", field));
  return v;
}

Result<void> checkName(const json& config, const char* field, bool required, size_t minLength,
                       bool (*allowed)(std::string_view)) {
  if (!config.contains(field)) {
    if (required) return invalid(fmt::format("config.{} is required", field));
    return {};
  }
  auto v = optionalString(config, field, kMaxNameLength);
  if (!v) return v.error();
  if (v->size() < minLength) return invalid(fmt::format("config.{} must not be empty", field));
  if (!allowed(*v)) return invalid(fmt::format("config.{} has characters it may not hold", field));
  return {};
}

bool anyPrintable(std::string_view) { return true; }

// A NATS subject to publish to: dot-separated tokens, no empty token, no
// wildcard, no white space.
bool natsSubject(std::string_view s) {
  if (s.empty() || s.front() == '.' || s.back() == '.' || s.find("..") != std::string_view::npos) return false;
  return std::none_of(s.begin(), s.end(), [](unsigned char c) {
    return c == ' ' || c == '\t' || c == '*' || c == '>' || c > 0x7e;
  });
}

// AMQP exchange names: letters, digits, '-', '_', '.', ':' (RabbitMQ's rule).
bool exchangeName(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == ':';
  });
}

Result<void> refuseUnknown(const json& config, std::initializer_list<std::string_view> known,
                           TargetType type) {
  if (!config.is_object()) return invalid("config must be a JSON object");
  for (const auto& [key, value] : config.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      return invalid(fmt::format("config.{} is not a field of a {} target", key, targetTypeWord(type)));
  return {};
}

Result<void> checkUrlField(TargetType type, const json& config) {
  if (!config.contains("url")) return invalid("config.url is required");
  if (!config["url"].is_string()) return invalid("config.url must be a string");
  const std::string& text = config["url"].get_ref<const std::string&>();
  if (text.size() > kMaxUrlLength)
    return invalid(fmt::format("config.url is longer than {} characters", kMaxUrlLength));
  if (auto r = parseBrokerUrl(type, text); !r) return r.error();
  return {};
}

Result<void> checkSecrets(const json& config, std::initializer_list<const char*> fields) {
  for (const char* field : fields)
    if (auto r = optionalString(config, field, kMaxSecretLength); !r) return r.error();
  return {};
}

Result<json> withTimeout(json config) {
  if (!config.contains("timeout_ms")) config["timeout_ms"] = kDefaultBrokerTimeout.count();
  const json& timeout = config["timeout_ms"];
  if (!timeout.is_number_integer() || timeout.get<int64_t>() < 100 ||
      timeout.get<int64_t>() > 120000)
    return invalid("config.timeout_ms must be an integer from 100 to 120000");
  return config;
}

Result<json> validateRedis(const json& config) {
  if (auto r = refuseUnknown(config, {"url", "stream", "username", "password", "maxlen", "timeout_ms"},
                             TargetType::kRedisStream);
      !r)
    return r.error();
  if (auto r = checkUrlField(TargetType::kRedisStream, config); !r) return r.error();
  if (auto r = checkName(config, "stream", true, 1, anyPrintable); !r) return r.error();
  if (auto r = checkSecrets(config, {"username", "password"}); !r) return r.error();
  if (config.contains("username") && !config.contains("password"))
    return invalid("config.username needs a password");
  if (config.contains("maxlen")) {
    const json& m = config["maxlen"];
    if (!m.is_number_integer() || m.get<int64_t>() < 1 || m.get<int64_t>() > 1'000'000'000'000)
      return invalid("config.maxlen must be an integer from 1 to 1000000000000");
  }
  return withTimeout(config);
}

Result<json> validateNats(const json& config) {
  if (auto r = refuseUnknown(config, {"url", "subject", "username", "password", "token", "timeout_ms"},
                             TargetType::kNats);
      !r)
    return r.error();
  if (auto r = checkUrlField(TargetType::kNats, config); !r) return r.error();
  if (auto r = checkName(config, "subject", true, 1, natsSubject); !r) return r.error();
  if (auto r = checkSecrets(config, {"username", "password", "token"}); !r) return r.error();
  if (config.contains("username") != config.contains("password"))
    return invalid("config.username and config.password go together");
  if (config.contains("token") && config.contains("username"))
    return invalid("config.token and config.username exclude each other");
  return withTimeout(config);
}

Result<json> validateAmqp(json config) {
  if (auto r = refuseUnknown(config, {"url", "exchange", "routing_key", "username", "password",
                                      "timeout_ms"},
                             TargetType::kAmqp);
      !r)
    return r.error();
  if (auto r = checkUrlField(TargetType::kAmqp, config); !r) return r.error();
  if (!config.contains("exchange")) config["exchange"] = "";
  if (auto r = checkName(config, "exchange", false, 0, exchangeName); !r) return r.error();
  if (!config.contains("routing_key")) config["routing_key"] = "{type}";
  if (auto r = checkName(config, "routing_key", false, 0, anyPrintable); !r) return r.error();
  if (auto r = checkSecrets(config, {"username", "password"}); !r) return r.error();
  if (config.contains("username") != config.contains("password"))
    return invalid("config.username and config.password go together");
  return withTimeout(config);
}

std::string stringOr(const json& config, const char* field, std::string fallback = "") {
  const auto it = config.find(field);
  return it != config.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::chrono::milliseconds timeoutOf(const json& config) {
  const auto it = config.find("timeout_ms");
  return it != config.end() && it->is_number_integer()
             ? std::chrono::milliseconds(it->get<int64_t>())
             : kDefaultBrokerTimeout;
}

// A stored config checked again as the API would, then its address.
Result<BrokerAddress> readAddress(TargetType type, const json& config) {
  const std::string* text =
      config.contains("url") && config["url"].is_string() ? &config["url"].get_ref<const std::string&>()
                                                          : nullptr;
  if (!text) return invalid(fmt::format("the {} target has no valid url", targetTypeWord(type)));
  return parseBrokerUrl(type, *text);
}

}  // namespace

Url BrokerAddress::vettable() const {
  Url out = url;
  out.scheme = tls ? "https" : "http";
  return out;
}

std::string BrokerAddress::hostPort() const {
  return (url.ipv6Literal ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port);
}

bool isPublishableNatsSubject(std::string_view subject) { return natsSubject(subject); }

Result<json> validateQueueConfig(TargetType type, const json& config) {
  switch (type) {
    case TargetType::kRedisStream: return validateRedis(config);
    case TargetType::kNats: return validateNats(config);
    case TargetType::kAmqp: return validateAmqp(config);
    default: return invalid(fmt::format("a {} target is no queue target", targetTypeWord(type)));
  }
}

json redactQueueConfig(const json& config) {
  json out = config;
  if (!out.is_object()) return out;
  for (const char* field : {"username", "password", "token"})
    if (out.contains(field)) out[field] = kRedacted;
  return out;
}

std::optional<Url> queueConfigVettableUrl(TargetType type, const json& config) {
  if (!config.is_object()) return std::nullopt;
  auto address = readAddress(type, config);
  if (!address) return std::nullopt;
  return address->vettable();
}

Result<RedisStreamDeliveryConfig> readRedisStreamConfig(const json& config) {
  if (auto r = validateRedis(config); !r) return r.error();
  RedisStreamDeliveryConfig out;
  auto address = readAddress(TargetType::kRedisStream, config);
  if (!address) return address.error();
  out.address = std::move(*address);
  out.stream = stringOr(config, "stream");
  out.username = stringOr(config, "username");
  out.password = stringOr(config, "password");
  if (config.contains("maxlen")) out.maxlen = config["maxlen"].get<int64_t>();
  out.timeout = timeoutOf(config);
  return out;
}

Result<NatsDeliveryConfig> readNatsConfig(const json& config) {
  if (auto r = validateNats(config); !r) return r.error();
  NatsDeliveryConfig out;
  auto address = readAddress(TargetType::kNats, config);
  if (!address) return address.error();
  out.address = std::move(*address);
  out.subject = stringOr(config, "subject");
  out.username = stringOr(config, "username");
  out.password = stringOr(config, "password");
  out.token = stringOr(config, "token");
  out.timeout = timeoutOf(config);
  return out;
}

Result<AmqpDeliveryConfig> readAmqpConfig(const json& config) {
  if (auto r = validateAmqp(config); !r) return r.error();
  AmqpDeliveryConfig out;
  auto address = readAddress(TargetType::kAmqp, config);
  if (!address) return address.error();
  out.address = std::move(*address);
  out.exchange = stringOr(config, "exchange");
  out.routingKey = stringOr(config, "routing_key", "{type}");
  out.username = stringOr(config, "username", "guest");
  out.password = stringOr(config, "password", "guest");
  out.timeout = timeoutOf(config);
  return out;
}

std::string expandTypeTemplate(std::string_view text, std::string_view eventType) {
  constexpr std::string_view kField = "{type}";
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, kField.size()) == kField) {
      out += eventType;
      i += kField.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

}  // namespace webhooker
