// Verifying that an inbound request really comes from its sender, per
// entrypoint: Standard Webhooks (webhook-id / webhook-timestamp /
// webhook-signature), GitHub (X-Hub-Signature-256: sha256=<hex HMAC of the
// body>) and Stripe (Stripe-Signature: t=<time>,v1=<hex HMAC of
// "t.body">). Timestamps must be within kTolerance of now, both ways.
// Pure functions, any thread; signatures are compared in constant time.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/result.h"

namespace webhooker::server {

inline constexpr std::chrono::minutes kTolerance{5};

// A header's value by name (case-insensitive), "" when absent.
using HeaderLookup = std::function<std::string(const char* name)>;

bool isVerificationScheme(std::string_view scheme);  // none, standard, github, stripe

// Checks a secret for a scheme: standard needs "whsec_" + base64 of 24-64
// bytes, github and stripe any 1-256 characters. "invalid_field" otherwise.
Result<void> validateVerificationSecret(std::string_view scheme, std::string_view secret);

// Error codes name the reason (also the metric label): missing_signature,
// malformed_signature, stale_timestamp, bad_signature.
Result<void> verifyInbound(std::string_view scheme, std::string_view secret,
                           const HeaderLookup& header, std::string_view body, TimePoint now);

}  // namespace webhooker::server
