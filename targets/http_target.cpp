#include "targets/http_target.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <string_view>
#include <variant>
#include <vector>

#include "base/ascii_case.h"
#include "targets/webhook_signature.h"

namespace webhooker {

namespace {

bool isForwardingHeader(const std::string& name) {
  static constexpr std::array<std::string_view, 3> kForwarding = {"forwarded", "x-real-ip", "via"};
  constexpr std::string_view kPrefix = "x-forwarded-";
  return equalsIgnoringCase(std::string_view(name).substr(0, kPrefix.size()), kPrefix) ||
         std::any_of(kForwarding.begin(), kForwarding.end(),
                     [&](std::string_view f) { return equalsIgnoringCase(name, f); });
}

}  // namespace

HeaderList forwardableHeaders(const HeaderList& headers, bool forwarding) {
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
    return (!forwarding && isForwardingHeader(name)) ||
           std::any_of(kDropped.begin(), kDropped.end(),
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
  if (const auto* error = std::get_if<Error>(&ctx.config)) return *error;
  const auto* config = std::get_if<HttpDeliveryConfig>(&ctx.config);
  if (!config) return makeError(error_code::kInvalidConfig, "the target has no http config");

  OutboundRequest request;
  request.url = config->url;
  request.method = config->method;
  request.timeout = config->timeout;
  request.egress = config->egress;
  request.body = std::move(ctx.payload.body);
  request.headers = forwardableHeaders(ctx.payload.headers, config->passForwardingHeaders);
  for (const auto& [name, value] : config->headers) {
    const std::string_view replaced = name;  // clang's lambdas cannot capture a binding
    std::erase_if(request.headers,
                  [replaced](const auto& h) { return equalsIgnoringCase(h.first, replaced); });
    request.headers.emplace_back(name, value);
  }
  const TimePoint now = clock().now();
  if (const auto secrets = config->signingSecretsAt(now); !secrets.empty()) {
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
  }
  return request;
}

}  // namespace webhooker
