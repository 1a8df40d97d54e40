// Verifying that an inbound request really comes from its sender, per
// entrypoint, by a declarative signature scheme: where the signature is (a
// header, an optional prefix such as "sha256=", a list such as Stripe's
// "t=…,v1=…"), the algorithm (HMAC-SHA1/256/512, a shared token compared as
// is, HTTP Basic), the encoding, and the signed content as a template over
// the raw body, a timestamp, the public URL, sorted form fields and headers.
// Presets fill the scheme for known providers (github, stripe, standard, …);
// "custom" takes it from the entrypoint's settings. Timestamps must be within
// the scheme's tolerance of now, both ways. Several secrets may be active at
// once (rotation): any one verifies. Pure functions, any thread; signatures
// are compared in constant time.
//
// Fail-closed: the scheme and secrets come from a database row that someone
// may have edited or damaged, so a scheme this binary does not know, or a
// secret the scheme cannot use (empty, a NULL read as ""), refuses the
// request instead of letting it through.
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/hmac.h"
#include "base/result.h"
#include "storage/verification_scheme.h"

namespace webhooker::server {

inline constexpr std::chrono::minutes kTolerance{5};

// A header's value by name (case-insensitive), "" when absent.
using HeaderLookup = std::function<std::string(const char* name)>;

enum class SignatureAlgorithm { kHmacSha1, kHmacSha256, kHmacSha512, kToken, kBasic };
enum class SignatureEncoding { kHex, kBase64 };
// How a secret turns into the HMAC key: as it is, or Standard Webhooks'
// "whsec_" + base64 of the key.
enum class SecretFormat { kRaw, kWhsec };

struct SignatureScheme {
  SignatureAlgorithm algorithm = SignatureAlgorithm::kHmacSha256;
  SignatureEncoding encoding = SignatureEncoding::kHex;
  SecretFormat secretFormat = SecretFormat::kRaw;
  std::string header;           // "Name" or "Name|Other": the first present one
  std::string prefix;           // each signature starts with it ("sha256=", "v0=", "v1,")
  std::string separator;        // between several signatures or key=value items; "": one value
  std::string signatureKey;     // items are "key=value": the signatures' key ("v1")
  std::string timestampKey;     // …and the timestamp's ("t")
  std::string timestampHeader;  // or a header holding the timestamp ("Name|Other")
  // The signed bytes: {body}, {timestamp}, {url} (the public URL and the
  // request's path and query), {form} (a form body's fields sorted by name,
  // each name then value, as Twilio signs) and {header:Name}, between
  // literal text.
  std::string content = "{body}";
  std::chrono::seconds tolerance = kTolerance;

  bool usesTimestamp() const { return !timestampKey.empty() || !timestampHeader.empty(); }
  bool usesUrl() const { return content.find("{url}") != std::string::npos; }
};

// What a preset checks; nullopt for none and custom.
std::optional<SignatureScheme> presetScheme(VerificationScheme scheme);

// Checks a scheme's parts (a custom one, or a preset's with the entrypoint's
// tolerance); errors are "invalid_field" naming the field, as the API takes
// it ("verification.content", …).
Result<void> validateScheme(const SignatureScheme& scheme);

// Checks a secret for a scheme: whsec needs "whsec_" + base64 of 24-64
// bytes, basic "user:password", any other 1-256 characters.
Result<void> validateSecret(const SignatureScheme& scheme, std::string_view secret);
// The same for a scheme by its word (a preset's; none or custom: anything).
Result<void> validateVerificationSecret(std::string_view schemeWord, std::string_view secret);

// Failure reasons (error codes, and the metric's `reason` label). The last
// two blame the entrypoint's stored settings, not the sender.
inline constexpr std::array<std::string_view, 6> kVerificationFailureReasons = {
    error_code::kMissingSignature, error_code::kMalformedSignature, error_code::kStaleTimestamp,
    error_code::kBadSignature,     error_code::kUnknownScheme,      error_code::kUnusableSecret};

// True for error_code::kUnknownScheme and kUnusableSecret.
bool isUnusableSettings(const Error& failure);

// What one request offers to verification.
struct InboundRequest {
  const HeaderLookup& header;
  std::string_view body;
  std::string_view target;     // the path and query as received ("/hooks/<id>?a=1")
  std::string_view publicUrl;  // the entrypoint's public URL's scheme, host and prefix
};

// `scheme` nullopt: verification none, everything passes. `secrets` newest
// first. Error codes are one of kVerificationFailureReasons.
Result<void> verifyRequest(const std::optional<SignatureScheme>& scheme,
                           const std::vector<std::string>& secrets, const InboundRequest& request,
                           TimePoint now);

// A preset (or none) by its word with one secret, no URL: what the schemes
// of old took. Any other word refuses with "unknown_scheme".
Result<void> verifyInbound(std::string_view schemeWord, std::string_view secret,
                           const HeaderLookup& header, std::string_view body, TimePoint now);

// The MAC of `data` under a secret as the scheme turns it into a key,
// encoded as the scheme sends it (without its prefix). For handshakes that
// answer with one (Zoom, X) and for tests. Requires an HMAC scheme and a
// secret validateSecret accepts.
std::string schemeMac(const SignatureScheme& scheme, std::string_view secret,
                      std::string_view data);

}  // namespace webhooker::server
