// What a target of each type may be configured with, checked when the API
// writes it, and how it is shown back with its secrets redacted.
//
//   http:     {"url", "method", "headers", "timeout_ms", "signing_secret",
//              "previous_signing_secret", "previous_secret_expires_at",
//              "pass_forwarding_headers", "proxy", "tls"}
//             proxy: "http://[user:password@]host:port" (targets/egress.h)
//             tls: {"ca_bundle", "ca_bundle_only", "client_cert", "client_key"}
//             (PEM; https URLs only; checked: parses, not expired, key matches)
//             oauth2: {"token_url", "client_id", "client_secret", "scope",
//             "audience"} (client credentials, targets/oauth2.h)
//   slack:    {"webhook_url"}
//   database: {}          log: {}          pull: {} (consumers lease, docs/api.md#pull)
//   redis_stream, nats, amqp: see queue_config.h
//
// Errors are "invalid_config" / "invalid_retry" with a message naming the
// field; unknown fields are refused so a typo never silently does nothing.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/result.h"
#include "storage/records.h"
#include "storage/target_type.h"

namespace webhooker {

// Checks `config` for `type` and returns it with defaults filled in.
Result<nlohmann::json> validateTargetConfig(TargetType type, const nlohmann::json& config);

// The config as the API shows it: signing secrets, the proxy's credentials,
// the TLS client certificate and key, the OAuth2 client secret, the Slack
// webhook URL's
// path, an http URL's path segments that read as tokens (16+ characters
// mixing letters and digits), URL query strings and every header value
// replaced, except those of
// a few headers that never carry credentials (Content-Type, User-Agent,
// Accept, Accept-Language, Content-Language); a queue target's username,
// password and token.
nlohmann::json redactTargetConfig(TargetType type, const nlohmann::json& config);

// How long a replaced signing secret keeps being signed with by default.
inline constexpr std::chrono::hours kSigningRotationGrace{24};

// Signing-secret rotation on an API write. `before` is the stored config,
// `patch` the request body, `merged` the config after the merge (changed in
// place, before validation). When the write replaces a set signing_secret
// and names no previous_signing_secret itself, the old secret becomes
// previous_signing_secret; a previous secret without an expiry gets
// now + kSigningRotationGrace; removing signing_secret drops both.
void applySigningRotation(const nlohmann::json& before, const nlohmann::json& patch,
                          nlohmann::json& merged, TimePoint now);

// Applies the fields present in `retry` onto `base` and checks the bounds:
// max_retries 0..20, base_delay_ms 100..3,600,000, max_delay_ms
// base_delay_ms..86,400,000, jitter 0..0.9.
Result<RetryPolicy> applyRetryPolicy(const nlohmann::json& retry, RetryPolicy base);

nlohmann::json retryPolicyJson(const RetryPolicy& policy);

}  // namespace webhooker
