// The configs of the queue targets (redis_stream, nats, amqp): checked when
// the API writes them, read back for attempts, shown with their secrets
// redacted.
//
//   redis_stream: {"url": "redis://host[:port]", "stream", "username",
//                  "password", "maxlen", "timeout_ms"}
//   nats:         {"url": "nats://host[:port]" or "tls://...", "subject",
//                  "username", "password", "token", "timeout_ms"}
//   amqp:         {"url": "amqp://host[:port][/vhost]" or "amqps://...",
//                  "exchange", "routing_key", "username", "password",
//                  "timeout_ms"}
//
// A broker URL names the host and port only: credentials go in their own
// fields (secrets: redacted in every answer, never in an error message), so
// a URL can be shown as it is. "{type}" in a NATS subject or an AMQP routing
// key is replaced with the event's type.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/url.h"
#include "storage/target_type.h"

namespace webhooker {

inline constexpr std::chrono::milliseconds kDefaultBrokerTimeout{10000};

// A broker's address. `url.scheme` is the broker's (redis, nats, tls, amqp,
// amqps); vettable() is the same host and port as the SSRF guard checks it.
struct BrokerAddress {
  Url url;
  bool tls = false;
  std::string vhost;  // amqp only: the URL's path, percent-decoded; "/" if none

  Url vettable() const;
  std::string hostPort() const;  // "host:port", IPv6 in brackets
};

struct RedisStreamDeliveryConfig {
  BrokerAddress address;
  std::string stream;
  std::string username;  // empty: AUTH with the password alone
  std::string password;  // empty: no AUTH
  std::optional<int64_t> maxlen;  // XADD MAXLEN ~ n
  std::chrono::milliseconds timeout = kDefaultBrokerTimeout;
};

struct NatsDeliveryConfig {
  BrokerAddress address;
  std::string subject;  // may hold {type}
  std::string username;
  std::string password;
  std::string token;
  std::chrono::milliseconds timeout = kDefaultBrokerTimeout;
};

struct AmqpDeliveryConfig {
  BrokerAddress address;
  std::string exchange;     // "" is the default exchange
  std::string routingKey;   // may hold {type}
  std::string username = "guest";
  std::string password = "guest";
  std::chrono::milliseconds timeout = kDefaultBrokerTimeout;
};

// Checks a queue target's config and fills in defaults ("invalid_config",
// naming the field).
Result<nlohmann::json> validateQueueConfig(TargetType type, const nlohmann::json& config);

// The config as the API shows it: username, password and token redacted.
nlohmann::json redactQueueConfig(const nlohmann::json& config);

// The broker URL of a stored or proposed config, for the SSRF guard's check
// at write time; nullopt if it has none that parses.
std::optional<Url> queueConfigVettableUrl(TargetType type, const nlohmann::json& config);

Result<RedisStreamDeliveryConfig> readRedisStreamConfig(const nlohmann::json& config);
Result<NatsDeliveryConfig> readNatsConfig(const nlohmann::json& config);
Result<AmqpDeliveryConfig> readAmqpConfig(const nlohmann::json& config);

// A NATS subject one may publish to: dot-separated tokens, none empty, no
// wildcard, no white space (what a subject template must expand to).
bool isPublishableNatsSubject(std::string_view subject);

// `text` with every "{type}" replaced by `eventType`.
std::string expandTypeTemplate(std::string_view text, std::string_view eventType);

}  // namespace webhooker
