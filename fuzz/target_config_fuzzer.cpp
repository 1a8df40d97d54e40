// Target configs as the admin API receives them (targets/target_config). The
// input is one JSON document {"type", "config", "patch", "retry"}, read the
// way admin_targets.cpp reads a create and then an update. Properties:
//  - validation never throws, and a config it accepts is accepted again
//    unchanged (defaults are filled in once);
//  - what the API shows of an accepted config has every secret redacted;
//  - after an update (merge, signing-secret rotation, validation) every
//    secret a delivery would sign with is usable, so signing cannot throw;
//  - an accepted retry policy is within its bounds and round-trips.
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <variant>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "targets/delivery_config.h"
#include "targets/target_config.h"
#include "targets/webhook_signature.h"

namespace {

using nlohmann::json;

bool looksSecretHeader(std::string name) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* word : {"auth", "token", "secret", "key", "cookie", "password", "signature"})
    if (name.find(word) != std::string::npos) return true;
  return false;
}

void checkRedacted(webhooker::TargetType type, const json& config) {
  const json shown = webhooker::redactTargetConfig(type, config);
  FUZZ_CHECK(webhooker::redactTargetConfig(type, shown) == shown);
  for (const char* field : {"signing_secret", "previous_signing_secret"})
    if (shown.contains(field)) FUZZ_CHECK(shown[field] == "[redacted]");
  // A queue target's credentials.
  if (webhooker::isQueueTargetType(type))
    for (const char* field : {"username", "password", "token"})
      if (shown.contains(field)) FUZZ_CHECK(shown[field] == "[redacted]");
  if (shown.contains("headers"))
    for (const auto& [name, value] : shown["headers"].items())
      if (looksSecretHeader(name)) FUZZ_CHECK(value == "[redacted]");
  for (const char* field : {"url", "webhook_url"}) {
    if (!shown.contains(field)) continue;
    const std::string url = shown[field].get<std::string>();
    const size_t query = url.find('?');
    if (query != std::string::npos) FUZZ_CHECK(url.substr(query) == "?[redacted]");
    if (type == webhooker::TargetType::kSlack) FUZZ_CHECK(url.ends_with("/[redacted]"));
  }
}

void checkUpdate(webhooker::TargetType type, const json& before, const json& patch) {
  if (!patch.is_object() || !patch.contains("config") || !patch["config"].is_object()) return;
  const auto now = std::chrono::system_clock::now();
  json merged = before;
  merged.merge_patch(patch["config"]);
  webhooker::applySigningRotation(before, patch, merged, now);
  const auto valid = webhooker::validateTargetConfig(type, merged);
  if (!valid) return;
  checkRedacted(type, *valid);
  for (const auto at : {now, now + std::chrono::hours(25)}) {
    const auto read = webhooker::readDeliveryConfig(type, valid->dump());
    FUZZ_CHECK(!std::holds_alternative<webhooker::Error>(read));
    const auto* http = std::get_if<webhooker::HttpDeliveryConfig>(&read);
    const auto secrets = http ? http->signingSecretsAt(at) : std::vector<std::string>{};
    for (const std::string& secret : secrets) FUZZ_CHECK(webhooker::signingKey(secret));
    (void)webhooker::standardWebhookSignatureHeader(secrets, "msg_1", 1, "{}");
  }
}

void checkRetry(const json& retry) {
  const auto policy = webhooker::applyRetryPolicy(retry, webhooker::RetryPolicy{});
  if (!policy) return;
  FUZZ_CHECK(policy->maxRetries >= 0 && policy->maxRetries <= 20);
  FUZZ_CHECK(policy->baseDelayMs >= 100 && policy->baseDelayMs <= policy->maxDelayMs &&
             policy->maxDelayMs <= 86'400'000);
  FUZZ_CHECK(policy->jitter >= 0.0 && policy->jitter <= 0.9);
  const auto again = webhooker::applyRetryPolicy(webhooker::retryPolicyJson(*policy), {});
  FUZZ_CHECK(again && again->maxRetries == policy->maxRetries &&
             again->baseDelayMs == policy->baseDelayMs && again->maxDelayMs == policy->maxDelayMs &&
             again->jitter == policy->jitter);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const json input = json::parse(data, data + size, nullptr, false);
  if (!input.is_object()) return 0;
  const auto parsed = input.contains("type") && input["type"].is_string()
                          ? webhooker::parseTargetType(input["type"].get<std::string>())
                          : webhooker::TargetType::kHttp;
  if (!parsed) return 0;  // the API refuses the word before any config is read
  const webhooker::TargetType type = *parsed;
  if (input.contains("retry")) checkRetry(input["retry"]);
  const json config = input.contains("config") ? input["config"] : json::object();

  const auto valid = webhooker::validateTargetConfig(type, config);
  if (!valid) return 0;
  const auto again = webhooker::validateTargetConfig(type, *valid);
  FUZZ_CHECK(again && *again == *valid);
  checkRedacted(type, *valid);
  if (input.contains("patch")) checkUpdate(type, *valid, input["patch"]);
  return 0;
}
