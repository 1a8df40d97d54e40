#include "targets/http_target.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <string_view>
#include <vector>

#include "base/ascii_case.h"
#include "targets/target_config.h"
#include "targets/webhook_signature.h"

namespace webhooker {

HeaderList forwardableHeaders(const HeaderList& headers) {
  static constexpr std::array<std::string_view, 12> kDropped = {
      "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
      "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length", "expect"};
  // Headers named in Connection are hop-by-hop too (RFC 9110 §7.6.1).
  std::vector<std::string> named;
  for (const auto& [name, value] : headers) {
    if (!equalsIgnoringCase(name, "connection")) continue;
    std::string token;
    for (char c : value + ",") {
      if (c == ',') {
        if (!token.empty()) named.push_back(std::move(token));
        token.clear();
      } else if (!std::isspace(static_cast<unsigned char>(c))) {
        token.push_back(c);
      }
    }
  }
  const auto dropped = [&](const std::string& name) {
    return std::any_of(kDropped.begin(), kDropped.end(),
                       [&](std::string_view d) { return equalsIgnoringCase(name, d); }) ||
           std::any_of(named.begin(), named.end(),
                       [&](const std::string& n) { return equalsIgnoringCase(name, n); });
  };
  HeaderList out;
  for (const auto& header : headers)
    if (!dropped(header.first)) out.push_back(header);
  return out;
}

Result<OutboundRequest> HttpTarget::buildRequest(const DeliveryContext& ctx, const Task& task) {
  const auto config = nlohmann::json::parse(ctx.target.configJson, nullptr, false);
  if (!config.is_object() || !config.contains("url") || !config["url"].is_string())
    return makeError(error_code::kInvalidConfig, "the target has no valid url");
  auto url = parseHttpUrl(config["url"].get<std::string>());
  if (!url) return makeError(error_code::kInvalidConfig, "the target url is not a valid http(s) URL");

  OutboundRequest request;
  request.url = std::move(*url);
  request.method = config.value("method", "POST");
  request.timeout = std::chrono::milliseconds(config.value("timeout_ms", 10000));
  request.body = ctx.payload.body;
  request.headers = forwardableHeaders(ctx.payload.headers);
  if (config.contains("headers") && config["headers"].is_object()) {
    for (const auto& [name, value] : config["headers"].items()) {
      if (!value.is_string()) continue;
      const std::string_view replaced = name;  // clang's lambdas cannot capture a binding
      std::erase_if(request.headers,
                    [replaced](const auto& h) { return equalsIgnoringCase(h.first, replaced); });
      request.headers.emplace_back(name, value.get<std::string>());
    }
  }
  const TimePoint now = clock().now();
  if (const auto secrets = activeSigningSecrets(config, now); !secrets.empty()) {
    for (const std::string& secret : secrets)
      if (!signingKey(secret))
        return makeError(error_code::kInvalidConfig, "the target's signing secret is malformed");
    // Ours win over anything the sender or the config put there: a receiver
    // must never verify a signature we did not make.
    std::erase_if(request.headers, [](const auto& h) {
      return equalsIgnoringCase(h.first, "webhook-id") ||
             equalsIgnoringCase(h.first, "webhook-timestamp") ||
             equalsIgnoringCase(h.first, "webhook-signature");
    });
    // One id per delivery (event x target), the same on every retry and
    // redrive, so receivers can deduplicate; the timestamp is this attempt's.
    const std::string msgId = webhookMessageId(task.deliveryId);
    const int64_t timestamp =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    request.headers.emplace_back("webhook-id", msgId);
    request.headers.emplace_back("webhook-timestamp", std::to_string(timestamp));
    request.headers.emplace_back(
        "webhook-signature", standardWebhookSignatureHeader(secrets, msgId, timestamp, request.body));
  } else if (config.contains("signing_secret")) {
    return makeError(error_code::kInvalidConfig, "the target's signing secret is malformed");
  }
  return request;
}

}  // namespace webhooker
