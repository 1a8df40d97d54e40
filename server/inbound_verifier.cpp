#include "server/inbound_verifier.h"

#include <charconv>
#include <vector>

#include "base/hmac.h"
#include "base/secret.h"
#include "targets/webhook_signature.h"

namespace webhooker::server {

namespace {

Error failure(std::string_view reason, std::string message) {
  return makeError(std::string(reason), std::move(message));
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t at = s.find(sep);
    if (!s.substr(0, at).empty()) out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

// Seconds since the epoch, checked against now ± the tolerance.
Result<void> checkTimestamp(std::string_view text, TimePoint now) {
  int64_t seconds = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
    return failure(error_code::kMalformedSignature, "the signature timestamp is not a number");
  // Compared in seconds: a sender's number may be far past what a
  // system_clock time point holds (nanoseconds overflow in 2262).
  const int64_t nowSeconds =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  const int64_t tolerance = std::chrono::seconds(kTolerance).count();
  if (seconds < nowSeconds - tolerance || seconds > nowSeconds + tolerance)
    return failure(error_code::kStaleTimestamp,
                   "the signature timestamp is more than 5 minutes off");
  return {};
}

Result<void> verifyStandard(std::string_view secret, const HeaderLookup& header,
                            std::string_view body, TimePoint now) {
  const std::string id = header("webhook-id");
  const std::string timestamp = header("webhook-timestamp");
  const std::string signatures = header("webhook-signature");
  if (id.empty() || timestamp.empty() || signatures.empty())
    return failure(error_code::kMissingSignature,
                   "webhook-id, webhook-timestamp and webhook-signature are required");
  if (auto r = checkTimestamp(timestamp, now); !r) return r;
  int64_t seconds = 0;
  std::from_chars(timestamp.data(), timestamp.data() + timestamp.size(), seconds);
  const std::string expected = standardWebhookSignature(secret, id, seconds, body);
  for (std::string_view candidate : split(signatures, ' '))
    if (constantTimeEquals(candidate, expected)) return {};
  return failure(error_code::kBadSignature, "no webhook-signature matches");
}

Result<void> verifyGithub(std::string_view secret, const HeaderLookup& header,
                          std::string_view body) {
  const std::string signature = header("X-Hub-Signature-256");
  if (signature.empty())
    return failure(error_code::kMissingSignature, "X-Hub-Signature-256 is required");
  if (signature.rfind("sha256=", 0) != 0)
    return failure(error_code::kMalformedSignature, "X-Hub-Signature-256 must start with sha256=");
  const std::string expected = "sha256=" + hexEncode(hmacSha256(secret, body));
  if (!constantTimeEquals(signature, expected))
    return failure(error_code::kBadSignature, "X-Hub-Signature-256 does not match");
  return {};
}

Result<void> verifyStripe(std::string_view secret, const HeaderLookup& header,
                          std::string_view body, TimePoint now) {
  const std::string signature = header("Stripe-Signature");
  if (signature.empty())
    return failure(error_code::kMissingSignature, "Stripe-Signature is required");
  std::string_view timestamp;
  std::vector<std::string_view> candidates;
  for (std::string_view part : split(signature, ',')) {
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) continue;
    if (part.substr(0, eq) == "t") timestamp = part.substr(eq + 1);
    if (part.substr(0, eq) == "v1") candidates.push_back(part.substr(eq + 1));
  }
  if (timestamp.empty() || candidates.empty())
    return failure(error_code::kMalformedSignature, "Stripe-Signature needs t= and v1=");
  if (auto r = checkTimestamp(timestamp, now); !r) return r;
  const std::string expected =
      hexEncode(hmacSha256(secret, std::string(timestamp) + "." + std::string(body)));
  for (std::string_view candidate : candidates)
    if (constantTimeEquals(candidate, expected)) return {};
  return failure(error_code::kBadSignature, "no v1 signature in Stripe-Signature matches");
}

}  // namespace

std::optional<VerificationScheme> verificationSchemeOf(std::string_view name) {
  if (name == "none") return VerificationScheme::none;
  if (name == "standard") return VerificationScheme::standard;
  if (name == "github") return VerificationScheme::github;
  if (name == "stripe") return VerificationScheme::stripe;
  return std::nullopt;
}

bool isUnusableSettings(const Error& failure) {
  return failure.code == error_code::kUnknownScheme || failure.code == error_code::kUnusableSecret;
}

Result<void> validateVerificationSecret(std::string_view scheme, std::string_view secret) {
  if (scheme == "standard" && !signingKey(secret))
    return makeError(error_code::kInvalidField,
                     "verification.secret must be \"whsec_\" followed by base64 of 24-64 bytes");
  if ((scheme == "github" || scheme == "stripe") && (secret.empty() || secret.size() > 256))
    return makeError(error_code::kInvalidField, "verification.secret must be 1 to 256 characters");
  return {};
}

Result<void> verifyInbound(std::string_view scheme, std::string_view secret,
                           const HeaderLookup& header, std::string_view body, TimePoint now) {
  const std::optional<VerificationScheme> known = verificationSchemeOf(scheme);
  if (!known)
    return failure(error_code::kUnknownScheme, "the entrypoint's verification scheme is unknown");
  // The rules the admin API enforced when the secret was set: a row edited
  // since (a NULL secret reads as "") must not verify against an empty key.
  if (!validateVerificationSecret(scheme, secret))
    return failure(error_code::kUnusableSecret, "the entrypoint's verification secret is unusable");
  switch (*known) {
    case VerificationScheme::none: return {};
    case VerificationScheme::standard: return verifyStandard(secret, header, body, now);
    case VerificationScheme::github: return verifyGithub(secret, header, body);
    case VerificationScheme::stripe: return verifyStripe(secret, header, body, now);
  }
  return failure(error_code::kUnknownScheme, "the entrypoint's verification scheme is unknown");
}

}  // namespace webhooker::server
