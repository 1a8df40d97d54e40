// The queue targets' configs (targets/queue_config.h): what the API takes
// and refuses for redis_stream, nats and amqp, the defaults it fills in,
// their secrets redacted, and the config an attempt reads back.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <variant>

#include "targets/delivery_config.h"
#include "targets/target_config.h"

namespace webhooker {
namespace {

using nlohmann::json;

std::string refusal(std::string_view type, const json& config) {
  const auto parsed = webhooker::parseTargetType(type);
  REQUIRE(parsed);
  auto r = validateTargetConfig(*parsed, config);
  return r ? std::string() : r.error().message;
}

TEST_CASE("redis_stream config: URL, stream, secrets and maxlen are checked at create") {
  const json ok = {{"url", "redis://cache.example:6380"}, {"stream", "events"}};
  auto valid = validateTargetConfig(webhooker::TargetType::kRedisStream, ok);
  REQUIRE(valid);
  CHECK((*valid)["timeout_ms"] == 10000);

  CHECK(refusal("redis_stream", {{"stream", "s"}}) == "config.url is required");
  CHECK(refusal("redis_stream", {{"url", "redis://h"}}) == "config.stream is required");
  CHECK(refusal("redis_stream", {{"url", "http://h"}, {"stream", "s"}}).find("redis://") !=
        std::string::npos);
  CHECK(refusal("redis_stream", {{"url", "rediss://h"}, {"stream", "s"}}).find("TLS") !=
        std::string::npos);
  CHECK(refusal("redis_stream", {{"url", "redis://u:pw@h"}, {"stream", "s"}})
            .find("credentials") != std::string::npos);
  CHECK(refusal("redis_stream", {{"url", "redis://h/0"}, {"stream", "s"}}) ==
        "config.url must not have a path");
  CHECK(refusal("redis_stream", {{"url", "redis://h:99999"}, {"stream", "s"}}) != "");
  CHECK(refusal("redis_stream", {{"url", "redis://h"}, {"stream", ""}}) ==
        "config.stream must not be empty");
  CHECK(refusal("redis_stream", {{"url", "redis://h"}, {"stream", "s"}, {"maxlen", 0}}) != "");
  CHECK(refusal("redis_stream", {{"url", "redis://h"}, {"stream", "s"}, {"maxlen", "9"}}) != "");
  CHECK(refusal("redis_stream", {{"url", "redis://h"}, {"stream", "s"}, {"username", "u"}}) ==
        "config.username needs a password");
  CHECK(refusal("redis_stream", {{"url", "redis://h"}, {"stream", "s"}, {"tls", true}}) ==
        "config.tls is not a field of a redis_stream target");
  // A bad secret's message never repeats it.
  const std::string secretError = refusal(
      "redis_stream", {{"url", "redis://h"}, {"stream", "s"}, {"password", "hunter2\nx"}});
  CHECK(secretError != "");
  CHECK(secretError.find("hunter2") == std::string::npos);
}

TEST_CASE("nats and amqp configs: schemes, subjects, exchanges and credentials") {
  CHECK(refusal("nats", {{"url", "nats://n.example"}, {"subject", "hooks.{type}"}}) == "");
  CHECK(refusal("nats", {{"url", "tls://n.example:4443"}, {"subject", "hooks"}}) == "");
  CHECK(refusal("nats", {{"url", "nats://n"}, {"subject", "hooks.*"}}) ==
        "config.subject has characters it may not hold");
  CHECK(refusal("nats", {{"url", "nats://n"}, {"subject", "a..b"}}) != "");
  CHECK(refusal("nats", {{"url", "nats://n"}, {"subject", "s"}, {"username", "u"}}) ==
        "config.username and config.password go together");
  CHECK(refusal("nats", {{"url", "nats://n"}, {"subject", "s"}, {"token", "t"}, {"username", "u"},
                         {"password", "p"}}) != "");
  auto amqp = validateTargetConfig(webhooker::TargetType::kAmqp, {{"url", "amqps://mq.example/prod%2fa"}});
  REQUIRE(amqp);
  CHECK((*amqp)["routing_key"] == "{type}");
  CHECK((*amqp)["exchange"] == "");
  CHECK(refusal("amqp", {{"url", "amqp://mq"}, {"exchange", "bad name"}}) != "");
  CHECK(refusal("amqp", {{"url", "nats://mq"}}).find("amqp://") != std::string::npos);

  const DeliveryConfig read = readDeliveryConfig(webhooker::TargetType::kAmqp, amqp->dump());
  const auto* config = std::get_if<AmqpDeliveryConfig>(&read);
  REQUIRE(config);
  CHECK(config->address.tls);
  CHECK(config->address.url.port == 5671);
  CHECK(config->address.vhost == "prod/a");
  CHECK(config->username == "guest");
  const DeliveryConfig nats =
      readDeliveryConfig(webhooker::TargetType::kNats, R"({"url":"nats://[::1]","subject":"s"})");
  REQUIRE(std::get_if<NatsDeliveryConfig>(&nats));
  CHECK(std::get<NatsDeliveryConfig>(nats).address.hostPort() == "[::1]:4222");
  // A stored config that no longer reads is the attempt's invalid_config.
  CHECK(std::holds_alternative<Error>(readDeliveryConfig(webhooker::TargetType::kNats, R"({"url":"http://x"})")));
}

TEST_CASE("queue configs: credentials are redacted in answers, the rest shown") {
  const json shown = redactTargetConfig(
      webhooker::TargetType::kAmqp, {{"url", "amqp://mq:5672/v"}, {"username", "app"}, {"password", "pw-123"},
               {"exchange", "x"}});
  CHECK(shown["username"] == "[redacted]");
  CHECK(shown["password"] == "[redacted]");
  CHECK(shown["url"] == "amqp://mq:5672/v");
  CHECK(redactTargetConfig(webhooker::TargetType::kNats, {{"token", "tok"}})["token"] == "[redacted]");
  CHECK(redactTargetConfig(webhooker::TargetType::kRedisStream, {{"password", "p"}})["password"] == "[redacted]");
  CHECK(expandTypeTemplate("hooks.{type}.{type}", "order.paid") == "hooks.order.paid.order.paid");
}

}  // namespace
}  // namespace webhooker
