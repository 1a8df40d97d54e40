// Every error code webhooker answers or logs, in one place. A code is the
// wire format of the admin API and the front door ({"error": {"code": ...}})
// and of the CLI's messages: never change one's text. Code refers to them by
// these names, never by a literal; Error's predicates (base/result.h) name
// the ones callers branch on.
#pragma once

#include <string_view>

namespace webhooker::error_code {

// The front door: requests refused before any handler runs.
inline constexpr std::string_view kBadRequest = "bad_request";
inline constexpr std::string_view kBodyTooLarge = "body_too_large";
inline constexpr std::string_view kHeadersTooLarge = "headers_too_large";
inline constexpr std::string_view kLengthRequired = "length_required";
inline constexpr std::string_view kMethodNotAllowed = "method_not_allowed";
inline constexpr std::string_view kNotImplemented = "not_implemented";
inline constexpr std::string_view kRequestTimeout = "request_timeout";
inline constexpr std::string_view kServerBusy = "server_busy";  // over --max-buffered-mb
inline constexpr std::string_view kTooManyConnections = "too_many_connections";
inline constexpr std::string_view kUriTooLong = "uri_too_long";
inline constexpr std::string_view kShuttingDown = "shutting_down";
inline constexpr std::string_view kInternalError = "internal_error";
inline constexpr std::string_view kUnauthorized = "unauthorized";
// A webhook-scoped token or portal session outside its scopes.
inline constexpr std::string_view kForbidden = "forbidden";
// A portal link that is unknown, expired or already used.
inline constexpr std::string_view kInvalidPortalLink = "invalid_portal_link";
inline constexpr std::string_view kUnavailable = "unavailable";

// Bad input to the admin API, the CLI or the configuration.
inline constexpr std::string_view kExpectedObject = "expected_object";
inline constexpr std::string_view kImmutableField = "immutable_field";
inline constexpr std::string_view kInvalidArgument = "invalid_argument";
inline constexpr std::string_view kInvalidConfig = "invalid_config";
inline constexpr std::string_view kInvalidCursor = "invalid_cursor";
inline constexpr std::string_view kInvalidField = "invalid_field";
inline constexpr std::string_view kInvalidIdempotencyKey = "invalid_idempotency_key";
inline constexpr std::string_view kInvalidJson = "invalid_json";
inline constexpr std::string_view kInvalidParameter = "invalid_parameter";
inline constexpr std::string_view kInvalidRetry = "invalid_retry";
inline constexpr std::string_view kInvalidTimeRange = "invalid_time_range";
inline constexpr std::string_view kUnknownField = "unknown_field";
inline constexpr std::string_view kUnknownParameter = "unknown_parameter";
inline constexpr std::string_view kUnknownTarget = "unknown_target";

// What a request asks of does not exist or is not in a state for it.
inline constexpr std::string_view kNotFound = "not_found";
inline constexpr std::string_view kConflict = "conflict";
inline constexpr std::string_view kOperationalWebhook = "operational_webhook";
inline constexpr std::string_view kAmbiguousName = "ambiguous_name";  // a name several share
inline constexpr std::string_view kAttemptsInFlight = "attempts_in_flight";
inline constexpr std::string_view kEntrypointInactive = "entrypoint_inactive";
inline constexpr std::string_view kNoActiveTargets = "no_active_targets";
inline constexpr std::string_view kRoutingBusy = "routing_busy";
inline constexpr std::string_view kTargetDeleted = "target_deleted";
inline constexpr std::string_view kTargetInactive = "target_inactive";
inline constexpr std::string_view kWebhookMoving = "webhook_moving";
// Pull targets: lease, ack, nack, extend (server/admin_pull.cpp).
inline constexpr std::string_view kNotPullTarget = "not_pull_target";
inline constexpr std::string_view kNotLeased = "not_leased";  // not in that lease, or done
inline constexpr std::string_view kLeaseExpired = "lease_expired";

// Inbound verification of a sender's signature (server/inbound_verifier.h);
// the last two blame the entrypoint's stored settings, not the sender.
inline constexpr std::string_view kVerificationFailed = "verification_failed";
inline constexpr std::string_view kSignatureInvalid = "signature_invalid";
inline constexpr std::string_view kMissingSignature = "missing_signature";
inline constexpr std::string_view kMalformedSignature = "malformed_signature";
inline constexpr std::string_view kStaleTimestamp = "stale_timestamp";
inline constexpr std::string_view kBadSignature = "bad_signature";
inline constexpr std::string_view kUnknownScheme = "unknown_scheme";
inline constexpr std::string_view kUnusableSecret = "unusable_secret";
// A provider's handshake with the wrong verify token (Meta's hub.verify_token).
inline constexpr std::string_view kHandshakeRefused = "handshake_refused";

// Routing rules and the jq sandbox.
inline constexpr std::string_view kInvalidEventType = "invalid_event_type";
inline constexpr std::string_view kInvalidFilter = "invalid_filter";
inline constexpr std::string_view kInvalidTransform = "invalid_transform";
inline constexpr std::string_view kJqError = "jq_error";
inline constexpr std::string_view kJqTimeout = "jq_timeout";
inline constexpr std::string_view kJqMemory = "jq_memory";
inline constexpr std::string_view kJqUnavailable = "jq_unavailable";
inline constexpr std::string_view kJqBusy = "jq_busy";

// Outbound destinations.
inline constexpr std::string_view kBlockedDestination = "blocked_destination";  // SSRF guard
inline constexpr std::string_view kDnsFailure = "dns_failure";

// Storage.
inline constexpr std::string_view kStorageBusy = "storage_busy";  // try again later
inline constexpr std::string_view kStorageReadonly =
    "storage_readonly";  // cannot be opened for writing
inline constexpr std::string_view kStorageUnavailable =
    "storage_unavailable";  // a write found the disk full
inline constexpr std::string_view kStorageError = "storage_error";
inline constexpr std::string_view kSchemaTooNew =
    "schema_too_new";  // the file is from a newer binary
inline constexpr std::string_view kSchemaMismatch = "schema_mismatch";
inline constexpr std::string_view kInvalidTransfer = "invalid_transfer";

// The process: its listening sockets and data folder.
inline constexpr std::string_view kAddressInUse = "address_in_use";
inline constexpr std::string_view kAddressNotAvailable = "address_not_available";
inline constexpr std::string_view kBindFailed = "bind_failed";
inline constexpr std::string_view kDataDirLocked = "data_dir_locked";
inline constexpr std::string_view kPermissionDenied = "permission_denied";

// The cluster commands (app/cluster_*).
inline constexpr std::string_view kHaproxyError = "haproxy_error";
inline constexpr std::string_view kHaproxyUnreachable = "haproxy_unreachable";
inline constexpr std::string_view kNodeError = "node_error";
inline constexpr std::string_view kNodeMismatch = "node_mismatch";
inline constexpr std::string_view kNodeUnreachable = "node_unreachable";
inline constexpr std::string_view kNotInCluster = "not_in_cluster";
inline constexpr std::string_view kSyncFailed = "sync_failed";

}  // namespace webhooker::error_code
