// Standard Webhooks signatures (https://www.standardwebhooks.com) for
// outbound http deliveries: webhook-id, webhook-timestamp and
// webhook-signature = "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>".
// Pure functions, callable from any thread. Secrets never reach a log here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace webhooker {

// The HMAC key of a "whsec_<base64>" secret (24-64 bytes, as target config
// validation requires), or nullopt when the secret is malformed.
std::optional<std::string> signingKey(std::string_view secret);

// "v1,<base64 signature>" of one message under one "whsec_..." secret.
// Throws std::invalid_argument for a malformed secret: callers check it with
// signingKey() first, so that is a bug.
std::string standardWebhookSignature(std::string_view secret, std::string_view msgId,
                                     int64_t timestampSeconds, std::string_view body);

// The webhook-signature header value: one "v1,..." per secret, separated by
// spaces (several while a rotated-out secret is still honoured), so a
// receiver holding either secret can verify.
std::string standardWebhookSignatureHeader(const std::vector<std::string>& secrets,
                                           std::string_view msgId, int64_t timestampSeconds,
                                           std::string_view body);

// A new "whsec_" secret of 32 random bytes (for config "signing_secret":
// "generate").
std::string newSigningSecret();

// The webhook-id of a delivery: stable across retries and redrives of that
// one event to that one target, so receivers can deduplicate on it.
std::string webhookMessageId(std::string_view deliveryId);

}  // namespace webhooker
