// Inbound signature verification against the schemes' published examples,
// plus tampering, stale and future timestamps and malformed headers.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "base/hmac.h"
#include "base/secret.h"
#include "server/inbound_verifier.h"

using namespace webhooker;
using namespace webhooker::server;

namespace {

HeaderLookup headersOf(std::map<std::string, std::string> headers) {
  return [headers](const char* name) {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  };
}

TimePoint at(int64_t seconds) { return TimePoint{std::chrono::seconds(seconds)}; }

// The Standard Webhooks specification's example message.
constexpr const char* kStdSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* kStdId = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr int64_t kStdTime = 1614265330;
constexpr const char* kStdBody = R"({"test": 2432232314})";
constexpr const char* kStdSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

// GitHub's documented example for X-Hub-Signature-256.
constexpr const char* kGithubSecret = "It's a Secret to Everybody";
constexpr const char* kGithubBody = "Hello, World!";
constexpr const char* kGithubSignature =
    "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

}  // namespace

TEST_CASE("standard: the specification's example verifies; tampering does not") {
  auto headers = [](std::string signature, std::string time = std::to_string(kStdTime)) {
    return headersOf({{"webhook-id", kStdId},
                      {"webhook-timestamp", std::move(time)},
                      {"webhook-signature", std::move(signature)}});
  };
  CHECK(verifyInbound("standard", kStdSecret, headers(kStdSignature), kStdBody, at(kStdTime)));
  // Several signatures, space-separated: any one matching is enough.
  CHECK(verifyInbound("standard", kStdSecret, headers(std::string("v1,bm9wZQ== ") + kStdSignature),
                      kStdBody, at(kStdTime)));
  CHECK(verifyInbound("standard", kStdSecret, headers(kStdSignature), R"({"test": 2432232315})",
                      at(kStdTime))
            .error()
            .code == "bad_signature");
  CHECK(verifyInbound("standard", "whsec_" "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", headers(kStdSignature),
                      kStdBody, at(kStdTime))
            .error()
            .code == "bad_signature");
  CHECK(verifyInbound("standard", kStdSecret, headers(kStdSignature), kStdBody, at(kStdTime + 301))
            .error()
            .code == "stale_timestamp");
  CHECK(verifyInbound("standard", kStdSecret, headers(kStdSignature), kStdBody, at(kStdTime - 301))
            .error()
            .code == "stale_timestamp");
  CHECK(verifyInbound("standard", kStdSecret, headers(kStdSignature, "soon"), kStdBody, at(kStdTime))
            .error()
            .code == "malformed_signature");
  CHECK(verifyInbound("standard", kStdSecret, headersOf({}), kStdBody, at(kStdTime)).error().code ==
        "missing_signature");
}

TEST_CASE("github: the documented example verifies; tampering does not") {
  const auto now = at(1'800'000'000);
  CHECK(verifyInbound("github", kGithubSecret,
                      headersOf({{"X-Hub-Signature-256", kGithubSignature}}), kGithubBody, now));
  CHECK(verifyInbound("github", kGithubSecret,
                      headersOf({{"X-Hub-Signature-256", kGithubSignature}}), "Hello, World?", now)
            .error()
            .code == "bad_signature");
  CHECK(verifyInbound("github", "another secret",
                      headersOf({{"X-Hub-Signature-256", kGithubSignature}}), kGithubBody, now)
            .error()
            .code == "bad_signature");
  CHECK(verifyInbound("github", kGithubSecret,
                      headersOf({{"X-Hub-Signature-256", "sha1=abc"}}), kGithubBody, now)
            .error()
            .code == "malformed_signature");
  CHECK(verifyInbound("github", kGithubSecret, headersOf({}), kGithubBody, now).error().code ==
        "missing_signature");
}

TEST_CASE("stripe: t and v1 over \"t.body\", with the tolerance") {
  const std::string secret = "whsec_stripe_test_secret";
  const std::string body = R"({"id":"evt_1","object":"event"})";
  const int64_t t = 1'800'000'000;
  const std::string v1 = hexEncode(hmacSha256(secret, std::to_string(t) + "." + body));
  const auto header = [&](const std::string& value) {
    return headersOf({{"Stripe-Signature", value}});
  };
  const std::string good = "t=" + std::to_string(t) + ",v1=" + v1 + ",v0=ignored";
  CHECK(verifyInbound("stripe", secret, header(good), body, at(t)));
  CHECK(verifyInbound("stripe", secret, header("t=" + std::to_string(t) + ",v1=00,v1=" + v1), body,
                      at(t)));
  CHECK(verifyInbound("stripe", secret, header(good), body + " ", at(t)).error().code ==
        "bad_signature");
  CHECK(verifyInbound("stripe", secret, header(good), body, at(t + 301)).error().code ==
        "stale_timestamp");
  // Signed more than 5 minutes ahead of this clock: as far off as one behind.
  CHECK(verifyInbound("stripe", secret, header(good), body, at(t - 301)).error().code ==
        "stale_timestamp");
  CHECK(verifyInbound("stripe", secret, header(good), body, at(t + 300)));
  CHECK(verifyInbound("stripe", secret, header(good), body, at(t - 300)));
  CHECK(verifyInbound("stripe", secret, header("v1=" + v1), body, at(t)).error().code ==
        "malformed_signature");
  CHECK(verifyInbound("stripe", secret, header("t=x,v1=" + v1), body, at(t)).error().code ==
        "malformed_signature");
  CHECK(verifyInbound("stripe", secret, headersOf({}), body, at(t)).error().code ==
        "missing_signature");
}

TEST_CASE("a timestamp far outside what a clock holds is stale, not an overflow") {
  // Seconds times 10^9 overflowed int64 in the nanosecond time point (UBSan).
  for (const char* ts : {"9223372036854775807", "-9223372036854775807", "253402300799"}) {
    const auto header = [&](const char* name) {
      return std::string(name) == "Stripe-Signature" ? "t=" + std::string(ts) + ",v1=00" : "";
    };
    const auto r = verifyInbound("stripe", "secret", header, "{}", std::chrono::system_clock::now());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "stale_timestamp");
  }
}

TEST_CASE("secrets are checked per scheme") {
  CHECK(validateVerificationSecret("standard", kStdSecret));
  CHECK_FALSE(validateVerificationSecret("standard", "not-a-whsec"));
  CHECK(validateVerificationSecret("github", kGithubSecret));
  CHECK_FALSE(validateVerificationSecret("github", ""));
  CHECK_FALSE(validateVerificationSecret("stripe", std::string(257, 'x')));
  using webhooker::VerificationScheme;
  CHECK(webhooker::parseVerificationScheme("none") == VerificationScheme::kNone);
  CHECK(webhooker::parseVerificationScheme("custom") == VerificationScheme::kCustom);
  CHECK(webhooker::parseVerificationScheme("shopify") == VerificationScheme::kShopify);
  CHECK_FALSE(webhooker::parseVerificationScheme("hmac"));
  CHECK_FALSE(webhooker::parseVerificationScheme("GitHub"));
  // Every scheme's word reads back; the presets, and only they, have a check.
  for (VerificationScheme s : webhooker::kVerificationSchemes) {
    CHECK(webhooker::parseVerificationScheme(webhooker::schemeWord(s)) == s);
    CHECK(presetScheme(s).has_value() == webhooker::isPresetScheme(s));
  }
}

TEST_CASE("settings the verifier cannot use refuse the request (fail closed)") {
  const std::string emptyKeySignature = "sha256=" + hexEncode(hmacSha256("", kGithubBody));
  const auto signedWithEmptyKey = headersOf({{"X-Hub-Signature-256", emptyKeySignature}});
  CHECK(verifyInbound("github", "", signedWithEmptyKey, kGithubBody, at(0)).error().code ==
        error_code::kUnusableSecret);
  CHECK(verifyInbound("standard", "", headersOf({}), kStdBody, at(kStdTime)).error().code ==
        error_code::kUnusableSecret);
  CHECK(
      verifyInbound("sha512", kGithubSecret, signedWithEmptyKey, kGithubBody, at(0)).error().code ==
      error_code::kUnknownScheme);
  CHECK(verifyInbound("", "", headersOf({}), kGithubBody, at(0)).error().code ==
        error_code::kUnknownScheme);
  CHECK(isUnusableSettings(verifyInbound("", "", headersOf({}), "", at(0)).error()));
  CHECK(verifyInbound("none", "", headersOf({}), kGithubBody, at(0)));
}
