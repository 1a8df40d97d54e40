// Standard Webhooks signing: HMAC-SHA256 against RFC 4231, the signature
// against the spec's published test vector, the multi-secret header, the
// stable message id and refusal of malformed secrets.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "base/hmac.h"
#include "base/secret.h"
#include "targets/webhook_signature.h"

namespace webhooker {
namespace {

// The Standard Webhooks spec's test vector.
constexpr const char* kSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* kMsgId = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr int64_t kTimestamp = 1614265330;
constexpr const char* kPayload = R"({"test": 2432232314})";
constexpr const char* kExpected = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

}  // namespace

TEST_CASE("hmacSha256 matches RFC 4231 test case 2") {
  const std::string mac = hmacSha256("Jefe", "what do ya want for nothing?");
  CHECK(mac.size() == 32);
  CHECK(hexEncode(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("hmacSha256 matches RFC 4231 test case 1 (binary key)") {
  CHECK(hexEncode(hmacSha256(std::string(20, '\x0b'), "Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST_CASE("hmacSha256 accepts an empty key and empty data") {
  // RFC-less but well known: HMAC-SHA256("", "").
  CHECK(hexEncode(hmacSha256("", "")) ==
        "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST_CASE("standardWebhookSignature matches the Standard Webhooks test vector") {
  CHECK(standardWebhookSignature(kSecret, kMsgId, kTimestamp, kPayload) == kExpected);
}

TEST_CASE("the signature changes with each signed part") {
  CHECK(standardWebhookSignature(kSecret, "msg_other", kTimestamp, kPayload) != kExpected);
  CHECK(standardWebhookSignature(kSecret, kMsgId, kTimestamp + 1, kPayload) != kExpected);
  CHECK(standardWebhookSignature(kSecret, kMsgId, kTimestamp, R"({"test": 2432232315})") !=
        kExpected);
}

TEST_CASE("the header carries one v1 signature per secret, space-separated") {
  const std::string other = "whsec_" + base64Encode(std::string(32, 'k'));
  CHECK(standardWebhookSignatureHeader({kSecret}, kMsgId, kTimestamp, kPayload) == kExpected);
  const std::string both =
      standardWebhookSignatureHeader({kSecret, other}, kMsgId, kTimestamp, kPayload);
  CHECK(both == std::string(kExpected) + " " +
                    standardWebhookSignature(other, kMsgId, kTimestamp, kPayload));
  CHECK(standardWebhookSignatureHeader({}, kMsgId, kTimestamp, kPayload).empty());
}

TEST_CASE("signingKey accepts whsec_ + base64 of 24-64 bytes only") {
  CHECK(signingKey(kSecret).has_value());
  CHECK(signingKey(kSecret)->size() == 24);
  CHECK(signingKey("whsec_" + base64Encode(std::string(64, 'x'))).has_value());
  CHECK_FALSE(signingKey("whsec_" + base64Encode(std::string(23, 'x'))));
  CHECK_FALSE(signingKey("whsec_" + base64Encode(std::string(65, 'x'))));
  CHECK_FALSE(signingKey("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
  CHECK_FALSE(signingKey("whsec_not base64!"));
  CHECK_FALSE(signingKey(""));
  CHECK_THROWS_AS(standardWebhookSignature("whsec_", kMsgId, kTimestamp, kPayload),
                  std::invalid_argument);
}

TEST_CASE("the message id is derived from the delivery id only") {
  CHECK(webhookMessageId("0190-abc") == "msg_0190-abc");
  CHECK(webhookMessageId("0190-abc") == webhookMessageId("0190-abc"));
}

}  // namespace webhooker
