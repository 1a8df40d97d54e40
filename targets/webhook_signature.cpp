#include "targets/webhook_signature.h"

#include <openssl/rand.h>

#include <stdexcept>

#include "base/hmac.h"
#include "base/secret.h"

namespace webhooker {

namespace {
constexpr std::string_view kSecretPrefix = "whsec_";
}  // namespace

std::optional<std::string> signingKey(std::string_view secret) {
  if (secret.substr(0, kSecretPrefix.size()) != kSecretPrefix) return std::nullopt;
  auto key = base64Decode(secret.substr(kSecretPrefix.size()));
  if (!key || key->size() < 24 || key->size() > 64) return std::nullopt;
  return key;
}

std::string standardWebhookSignature(std::string_view secret, std::string_view msgId,
                                     int64_t timestampSeconds, std::string_view body) {
  const auto key = signingKey(secret);
  // The message is not in the error: it would not help, and nothing about
  // the secret may leak into a log line.
  if (!key) throw std::invalid_argument("standardWebhookSignature: malformed signing secret");
  std::string content;
  const std::string timestamp = std::to_string(timestampSeconds);
  content.reserve(msgId.size() + timestamp.size() + body.size() + 2);
  content.append(msgId).append(".").append(timestamp).append(".").append(body);
  return "v1," + base64Encode(hmacSha256(*key, content));
}

std::string standardWebhookSignatureHeader(const std::vector<std::string>& secrets,
                                           std::string_view msgId, int64_t timestampSeconds,
                                           std::string_view body) {
  std::string out;
  for (const std::string& secret : secrets) {
    if (!out.empty()) out.push_back(' ');
    out += standardWebhookSignature(secret, msgId, timestampSeconds, body);
  }
  return out;
}

std::string webhookMessageId(std::string_view deliveryId) {
  return "msg_" + std::string(deliveryId);
}

std::string newSigningSecret() {
  std::string key(32, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1)
    throw std::runtime_error("the system random generator failed");
  return "whsec_" + base64Encode(key);
}

}  // namespace webhooker
