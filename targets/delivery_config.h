// DeliveryConfig: a target's stored config (TargetRecord::configJson) as its
// attempts use it, read once when the engine loads the target and cached
// with it, so no attempt parses JSON. target_config.h checks a config when
// the API writes it; this reads one back, and a stored config that no
// longer reads (edited by hand, say) becomes the error every attempt of
// that target records as invalid_config.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "base/url.h"
#include "targets/egress.h"
#include "storage/event_payload.h"
#include "targets/queue_config.h"

namespace webhooker {

// An http target's timeout_ms when the config names none, and the timeout of
// every other outbound attempt (OutboundRequest).
inline constexpr std::chrono::milliseconds kDefaultHttpTimeout{10000};

struct HttpDeliveryConfig {
  Url url;
  std::string method = "POST";
  HeaderList headers;  // the configured ones, in config order; they win over the event's
  std::chrono::milliseconds timeout = kDefaultHttpTimeout;
  // pass_forwarding_headers: the sender's Forwarded, X-Forwarded-*, X-Real-IP
  // and Via go on to the receiver (by default they stay behind).
  bool passForwardingHeaders = false;
  std::string signingSecret;  // empty: not signed
  std::string previousSigningSecret;
  std::optional<TimePoint> previousSecretExpiresAt;
  // proxy, tls and oauth2; null when the target has none of them.
  std::shared_ptr<const EgressOptions> egress;

  // The secrets an attempt at `now` signs with: signing_secret, then the
  // previous one while it has not expired. Empty when the target does not sign.
  std::vector<std::string> signingSecretsAt(TimePoint now) const;
};

struct SlackDeliveryConfig {
  Url webhookUrl;
};

// database and log targets have nothing to read (std::monostate).
using DeliveryConfig = std::variant<std::monostate, HttpDeliveryConfig, SlackDeliveryConfig,
                                    RedisStreamDeliveryConfig, NatsDeliveryConfig,
                                    AmqpDeliveryConfig, Error>;

// The config of a target of `type`, or the invalid_config Error an attempt
// records (its message names no secret).
DeliveryConfig readDeliveryConfig(TargetType type, std::string_view configJson);

}  // namespace webhooker
