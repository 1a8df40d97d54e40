// Verifying that an inbound request really comes from its sender, per
// entrypoint: Standard Webhooks (webhook-id / webhook-timestamp /
// webhook-signature), GitHub (X-Hub-Signature-256: sha256=<hex HMAC of the
// body>) and Stripe (Stripe-Signature: t=<time>,v1=<hex HMAC of
// "t.body">). Timestamps must be within kTolerance of now, both ways.
// Pure functions, any thread; signatures are compared in constant time.
//
// Fail-closed: the scheme and secret come from a database row that someone
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

#include "base/clock.h"
#include "base/result.h"

namespace webhooker::server {

inline constexpr std::chrono::minutes kTolerance{5};

// A header's value by name (case-insensitive), "" when absent.
using HeaderLookup = std::function<std::string(const char* name)>;

enum class VerificationScheme { none, standard, github, stripe };

// The scheme a stored or requested name stands for; nullopt for any other word.
std::optional<VerificationScheme> verificationSchemeOf(std::string_view name);

// Failure reasons (error codes, and the metric's `reason` label). The last
// two blame the entrypoint's stored settings, not the sender.
inline constexpr std::array<std::string_view, 6> kVerificationFailureReasons = {
    error_code::kMissingSignature, error_code::kMalformedSignature, error_code::kStaleTimestamp,
    error_code::kBadSignature,     error_code::kUnknownScheme,      error_code::kUnusableSecret};

// True for error_code::kUnknownScheme and kUnusableSecret.
bool isUnusableSettings(const Error& failure);

// Checks a secret for a scheme: standard needs "whsec_" + base64 of 24-64
// bytes, github and stripe any 1-256 characters. "invalid_field" otherwise.
Result<void> validateVerificationSecret(std::string_view scheme, std::string_view secret);

// `scheme` and `secret` as stored for the entrypoint; "none" passes
// everything. Error codes are one of kVerificationFailureReasons.
Result<void> verifyInbound(std::string_view scheme, std::string_view secret,
                           const HeaderLookup& header, std::string_view body, TimePoint now);

}  // namespace webhooker::server
