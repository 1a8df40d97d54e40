// Signature headers: inbound verification (server/inbound_verifier: the
// standard, github and stripe schemes) and Standard Webhooks secrets and
// signatures (targets/webhook_signature). Properties:
//  - headers the input made up never verify (it cannot compute an HMAC);
//  - a request signed correctly (for standard: by the outbound signer, so
//    both sides agree) verifies exactly when its timestamp is within the
//    tolerance, whatever noise surrounds the signature;
//  - secrets: "whsec_" + base64 of the key a secret decodes to decodes to
//    that key again, and the API accepts exactly the secrets signing accepts;
//  - declarative schemes the input puts together (algorithm, encoding,
//    prefix, list form, timestamp source, template): made-up headers never
//    verify, a request signed as the scheme describes verifies exactly when
//    its timestamp is within the tolerance, and one byte of the body changed
//    never verifies.
#include <fuzzer/FuzzedDataProvider.h>

#include <chrono>
#include <string>
#include <strings.h>
#include <utility>
#include <vector>

#include "base/secret.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/genuine_signature.h"
#include "server/inbound_verifier.h"
#include "targets/webhook_signature.h"

namespace {

using webhooker::TimePoint;
using Headers = webhooker::fuzz::HeaderPairs;

constexpr const char* kSchemes[] = {"standard", "github", "stripe"};
constexpr const char* kHeaderNames[] = {"webhook-id", "webhook-timestamp", "webhook-signature",
                                        "X-Hub-Signature-256", "Stripe-Signature"};

webhooker::server::HeaderLookup lookupIn(const Headers& headers) {
  return [&headers](const char* name) {
    for (const auto& [n, v] : headers)
      if (strcasecmp(n.c_str(), name) == 0) return v;
    return std::string();
  };
}

// Headers the input chooses freely: known names (any case) or any name.
Headers madeUpHeaders(FuzzedDataProvider& in) {
  Headers headers;
  const int count = in.ConsumeIntegralInRange(0, 6);
  for (int i = 0; i < count; ++i) {
    std::string name = in.ConsumeBool() ? std::string(in.PickValueInArray(kHeaderNames))
                                        : in.ConsumeRandomLengthString(32);
    headers.emplace_back(std::move(name), in.ConsumeRandomLengthString(200));
  }
  return headers;
}

void checkSecretRoundTrip(const std::string& text) {
  const auto key = webhooker::signingKey(text);
  FUZZ_CHECK(webhooker::server::validateVerificationSecret("standard", text).ok() == key.has_value());
  if (key) FUZZ_CHECK(webhooker::signingKey("whsec_" + webhooker::base64Encode(*key)) == key);
  FUZZ_CHECK(webhooker::base64Decode(webhooker::base64Encode(text)) == text);
}

// A template the input puts together from the parts the harness renders.
std::string templateFrom(FuzzedDataProvider& in, bool timestamped) {
  std::string out;
  const int parts = in.ConsumeIntegralInRange(1, 4);
  for (int i = 0; i < parts; ++i) {
    switch (in.ConsumeIntegralInRange(0, 3)) {
      case 0: out += "{body}"; break;
      case 1: out += timestamped ? "{timestamp}" : "{body}"; break;
      case 2: out += "{header:X-Id}"; break;
      default: {
        std::string literal = in.ConsumeRandomLengthString(8);
        std::erase_if(literal, [](char c) { return c == '{' || c == '}'; });
        out += literal;
      }
    }
  }
  return out;
}

// What the harness signs for `content`: each part rendered by hand.
std::string rendered(const std::string& content, const std::string& body, const std::string& ts,
                     const std::string& id) {
  // One pass over the template: a value put in (a body holding "{timestamp}")
  // is never read again as a part.
  const std::pair<std::string, std::string> parts[] = {
      {"{body}", body}, {"{timestamp}", ts}, {"{header:X-Id}", id}};
  std::string out;
  for (size_t at = 0; at < content.size();) {
    bool matched = false;
    for (const auto& part : parts) {
      if (content.compare(at, part.first.size(), part.first) != 0) continue;
      out += part.second;
      at += part.first.size();
      matched = true;
      break;
    }
    if (!matched) out += content[at++];
  }
  return out;
}

void checkDeclarative(FuzzedDataProvider& in, TimePoint now) {
  using namespace webhooker::server;
  constexpr SignatureAlgorithm kAlgorithms[] = {
      SignatureAlgorithm::kHmacSha1, SignatureAlgorithm::kHmacSha256,
      SignatureAlgorithm::kHmacSha512, SignatureAlgorithm::kToken};
  constexpr const char* kPrefixes[] = {"", "sha256=", "v0=", "v1,", "Bearer "};
  constexpr const char* kSeparators[] = {"", ",", ";", " "};
  SignatureScheme scheme;
  scheme.algorithm = in.PickValueInArray(kAlgorithms);
  const bool hmacScheme = scheme.algorithm != SignatureAlgorithm::kToken;
  scheme.encoding = in.ConsumeBool() ? SignatureEncoding::kHex : SignatureEncoding::kBase64;
  scheme.header = "X-Signature";
  scheme.prefix = in.PickValueInArray(kPrefixes);
  if (hmacScheme) {
    scheme.separator = in.PickValueInArray(kSeparators);
    if (!scheme.separator.empty() && in.ConsumeBool()) {
      scheme.signatureKey = "v1";
      if (in.ConsumeBool()) scheme.timestampKey = "t";
    }
    if (scheme.timestampKey.empty() && in.ConsumeBool()) scheme.timestampHeader = "X-Timestamp";
    scheme.tolerance = std::chrono::seconds(in.ConsumeIntegralInRange(1, 900));
    scheme.content = templateFrom(in, scheme.usesTimestamp());
  }
  if (!validateScheme(scheme)) return;  // refused settings never reach ingest
  std::string secret = in.ConsumeRandomLengthString(64);
  if (secret.empty()) secret = "s";
  const std::string body = in.ConsumeRandomLengthString(1024);
  const int64_t offset = in.ConsumeIntegralInRange(-1000, 1000);
  const std::string ts = std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count() + offset);
  const std::string id = webhooker::fuzz::headerValue(in, 32);

  // Made up: headers the input chooses, without the secret.
  Headers madeUp = {{"X-Id", id}, {"X-Timestamp", ts},
                    {"X-Signature", webhooker::fuzz::headerValue(in, 200)}};
  bool holdsSecret = false;
  for (const auto& [n, v] : madeUp) holdsSecret = holdsSecret || v.find(secret) != std::string::npos;
  const std::vector<std::string> secrets{secret};
  const auto verify = [&](const Headers& headers, const std::string& sent) {
    const auto lookup = lookupIn(headers);
    return verifyRequest(scheme, secrets, InboundRequest{lookup, sent, "/hooks/x", ""}, now);
  };
  if (!holdsSecret) FUZZ_CHECK(!verify(madeUp, body).ok());

  // Genuine: signed as the scheme describes.
  std::string value;
  if (!hmacScheme) {
    value = scheme.prefix + secret;
  } else {
    const std::string signature =
        scheme.prefix + schemeMac(scheme, secret, rendered(scheme.content, body, ts, id));
    value = scheme.signatureKey.empty() ? signature : scheme.signatureKey + "=" + signature;
    if (!scheme.timestampKey.empty()) value = "t=" + ts + scheme.separator + value;
  }
  Headers genuine = {{"X-Id", id}, {"X-Timestamp", ts}, {"X-Signature", value}};
  const auto verified = verify(genuine, body);
  // A template naming X-Id needs the header there.
  const bool complete = !id.empty() || scheme.content.find("{header:X-Id}") == std::string::npos;
  if (complete && (!scheme.usesTimestamp() || (offset >= -scheme.tolerance.count() &&
                                                offset <= scheme.tolerance.count())))
    FUZZ_CHECK(verified.ok());
  if (scheme.usesTimestamp() &&
      (offset < -scheme.tolerance.count() || offset > scheme.tolerance.count()))
    FUZZ_CHECK(!verified.ok());
  // One byte of the body changed: never, where the body is signed.
  if (hmacScheme && !body.empty() && scheme.content.find("{body}") != std::string::npos) {
    std::string changed = body;
    changed[changed.size() / 2] = static_cast<char>(changed[changed.size() / 2] ^ 0x01);
    FUZZ_CHECK(!verify(genuine, changed).ok());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string scheme = in.PickValueInArray(kSchemes);
  const TimePoint now{std::chrono::seconds(in.ConsumeIntegralInRange<int64_t>(0, 4'102'444'800))};
  const bool genuine = in.ConsumeBool();
  const std::string secret = webhooker::fuzz::secretFor(in, scheme);
  const int64_t offset = in.ConsumeIntegralInRange(-1000, 1000);
  const std::string body = in.ConsumeRandomLengthString(4096);
  const int64_t timestamp = std::chrono::duration_cast<std::chrono::seconds>(
                                now.time_since_epoch()).count() + offset;

  Headers headers =
      genuine ? webhooker::fuzz::genuineSignature(in, scheme, secret, timestamp, body) : Headers{};
  for (auto& header : madeUpHeaders(in)) headers.push_back(std::move(header));  // after: never win

  const auto verified =
      webhooker::server::verifyInbound(scheme, secret, lookupIn(headers), body, now);
  if (!genuine) {
    FUZZ_CHECK(!verified.ok());
  } else {
    FUZZ_CHECK(verified.ok() == webhooker::fuzz::mustVerify(scheme, offset, 0));
  }
  checkSecretRoundTrip(secret);
  checkDeclarative(in, now);
  checkSecretRoundTrip(in.ConsumeRemainingBytesAsString());
  return 0;
}
