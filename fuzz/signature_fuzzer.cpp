// Signature headers: inbound verification (server/inbound_verifier: the
// standard, github and stripe schemes) and Standard Webhooks secrets and
// signatures (targets/webhook_signature). Properties:
//  - headers the input made up never verify (it cannot compute an HMAC);
//  - a request signed correctly (for standard: by the outbound signer, so
//    both sides agree) verifies exactly when its timestamp is within the
//    tolerance, whatever noise surrounds the signature;
//  - secrets: "whsec_" + base64 of the key a secret decodes to decodes to
//    that key again, and the API accepts exactly the secrets signing accepts.
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
  checkSecretRoundTrip(in.ConsumeRemainingBytesAsString());
  return 0;
}
