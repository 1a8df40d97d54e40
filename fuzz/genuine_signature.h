// The headers a genuine sender puts on a request for an inbound verification
// scheme (standard, github, stripe), signed with `secret` at `timestamp`,
// with noise the fuzz input chooses (a Stripe part of its own before the
// real ones, another secret's signature before the real one). For the
// standard scheme the outbound signer makes them, so the fuzzers also show
// that what webhooker signs, webhooker verifies.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/hmac.h"
#include "base/secret.h"
#include "targets/webhook_signature.h"

namespace webhooker::fuzz {

using HeaderPairs = std::vector<std::pair<std::string, std::string>>;

// A secret the scheme accepts, from the input.
inline std::string secretFor(FuzzedDataProvider& in, const std::string& scheme) {
  if (scheme == "standard") {
    const size_t length = in.ConsumeIntegralInRange(24, 64);
    std::string key = in.ConsumeBytesAsString(length);
    key.resize(length, 'k');  // the input may run out
    return "whsec_" + base64Encode(key);
  }
  std::string secret = in.ConsumeRandomLengthString(256);
  return secret.empty() ? "s" : secret;
}

// A header value from the input: a genuine sender's never holds a NUL byte
// (RFC 9110 forbids it; cpp-httplib's lookup stops at one).
inline std::string headerValue(FuzzedDataProvider& in, size_t maxLength) {
  std::string value = in.ConsumeRandomLengthString(maxLength);
  std::erase(value, '\0');
  return value;
}

inline HeaderPairs genuineSignature(FuzzedDataProvider& in, const std::string& scheme,
                                    const std::string& secret, int64_t timestamp,
                                    const std::string& body) {
  const std::string ts = std::to_string(timestamp);
  if (scheme == "github")
    return {{"X-Hub-Signature-256", "sha256=" + hexEncode(hmacSha256(secret, body))}};
  if (scheme == "stripe")
    return {{"Stripe-Signature", headerValue(in, 64) + ",t=" + ts + ",v1=" +
                                     hexEncode(hmacSha256(secret, ts + "." + body))}};
  std::string id = headerValue(in, 64);
  if (id.empty()) id = "msg_1";
  std::vector<std::string> secrets{secret};
  if (in.ConsumeBool()) secrets.insert(secrets.begin(), newSigningSecret());
  return {{"webhook-id", id},
          {"webhook-timestamp", ts},
          {"webhook-signature", standardWebhookSignatureHeader(secrets, id, timestamp, body)}};
}

// Whether a signature made `offset` seconds away from the verifier's clock
// must verify (true), must not (false), or may go either way (nullopt: the
// clock moved on between signing and verifying).
inline std::optional<bool> mustVerify(const std::string& scheme, int64_t offset, int64_t slack) {
  if (scheme == "github") return true;
  if (offset >= -300 + slack && offset <= 300 - slack) return true;
  if (offset < -300 - slack || offset > 300 + slack) return false;
  return std::nullopt;
}

}  // namespace webhooker::fuzz
