// The rows of the main database, as plain values. Times are the stored
// ISO-8601 text; ids are canonical lowercase UUIDs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "storage/target_health_records.h"
#include "storage/target_type.h"
#include "storage/verification_scheme.h"

namespace webhooker {

struct Webhook {
  static constexpr int kDefaultRetentionDays = 30;
  static constexpr int64_t kDefaultMaxEvents = 100'000;

  std::string id;
  std::string name;
  std::string description;
  int retentionDays = kDefaultRetentionDays;
  int64_t maxEvents = kDefaultMaxEvents;  // events kept at most; the oldest finished go first
  // JSON pointers (RFC 6901) whose values are replaced with "[masked]" in a
  // stored JSON body once every delivery of the event is final.
  std::vector<std::string> maskPointers;
  std::string createdAt;
  std::string updatedAt;
  // Set while it moves out to that node (`webhooker cluster move`): no
  // events taken, no deliveries attempted here.
  std::optional<std::string> movingTo;
};

struct Entrypoint {
  std::string id;
  std::string webhookId;
  bool active = true;
  std::string createdAt;
  std::string updatedAt;
  // nullopt: a word this release does not know (a newer one wrote it);
  // such an entrypoint refuses every request until its verification is set.
  std::optional<VerificationScheme> verification = VerificationScheme::kNone;
  std::string verificationSecret;     // the sender's secret: never leaves the main DB
  // How an event's type is found, as JSON (routing/routing_rules.h); empty:
  // the default rule.
  std::string eventTypeRule;
  // Unique within its webhook; the API and the CLI take it wherever they
  // take the id. A webhook's first entrypoint is "default".
  std::string name;
  // JSON (server/inbound_settings.h): a custom scheme's parts, tolerance,
  // public URL, handshake and custom response; empty: none of them.
  std::string inboundSettings;
  // JSON: older secrets still honoured and Meta's verify token; empty: none.
  // Never leaves the main DB.
  std::string inboundSecrets;
};

// The name a webhook's first entrypoint gets.
inline constexpr const char* kFirstEntrypointName = "default";

// What a new entrypoint starts with.
struct EntrypointSettings {
  bool active = true;
  VerificationScheme verification = VerificationScheme::kNone;
  std::string verificationSecret;
  std::string eventTypeRule;  // as Entrypoint::eventTypeRule
  std::string name;           // empty: "ep-" and the start of its id
  std::string inboundSettings;  // as Entrypoint::inboundSettings
  std::string inboundSecrets;   // as Entrypoint::inboundSecrets
};

// An entrypoint's verification as a whole: scheme, secret, and the two JSON
// columns beside them (written together, so they always agree).
struct EntrypointInbound {
  // nullopt: the stored scheme's word is kept as it is (Entrypoint::verification)
  std::optional<VerificationScheme> verification = VerificationScheme::kNone;
  std::string verificationSecret;
  std::string inboundSettings;
  std::string inboundSecrets;
};

// What an entrypoint's update changes; nullopt leaves a field as it is.
struct EntrypointPatch {
  std::optional<std::string> name;
  std::optional<bool> active;
  // scheme, secret ("none": no secret), and the settings beside them
  std::optional<EntrypointInbound> verification;
  std::optional<std::string> eventTypeRule;  // "" back to the default
};

// Defaults from the retry rules: 6 attempts, 2 s doubling up to 300 s, ±20 %.
struct RetryPolicy {
  int maxRetries = 5;
  int64_t baseDelayMs = 2000;
  int64_t maxDelayMs = 300000;
  double jitter = 0.2;
};

struct TargetRecord {
  std::string id;
  std::string webhookId;
  std::string name;
  TargetType type = TargetType::kHttp;
  bool active = true;
  int maxConcurrency = 4;
  std::string configJson = "{}";  // holds credentials: never leaves the main DB unredacted
  RetryPolicy retry;
  std::string createdAt;
  std::string updatedAt;
  std::optional<std::string> deletedAt;
  // Subscription, transformation and rate limit, as JSON
  // (routing/routing_rules.h); checked when written.
  std::string routingJson = "{}";
  // Endpoint health (storage/target_health_records.h).
  TargetHealthPolicy health;
  std::optional<TargetDisabled> disabled;  // set: the engine holds its deliveries back
  // Its webhook is moving to another node, which will deliver instead.
  bool webhookMovingOut = false;

  // Whether its deliveries are consumers' to lease (type "pull"): the
  // engine never attempts them.
  bool pulled() const { return type == TargetType::kPull; }
  // Whether the engine attempts its deliveries now.
  bool deliverable() const {
    return active && !disabled && !deletedAt && !webhookMovingOut && !pulled();
  }
  TargetState state() const {
    if (disabled) return TargetState::kDisabled;
    return active ? TargetState::kActive : TargetState::kInactive;
  }
  bool fifo() const { return health.ordering == TargetOrdering::kFifo; }
};

}  // namespace webhooker
