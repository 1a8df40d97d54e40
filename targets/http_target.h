// HttpTarget: forwards the stored request to config.url with the retry core.
// Original headers go along except hop-by-hop ones, Host and Content-Length;
// configured headers are added on top (and win). With a signing_secret the
// request is signed per Standard Webhooks (webhook-id "msg_<delivery id>",
// webhook-timestamp of the attempt, webhook-signature, also with the previous
// secret until it expires); those three headers from elsewhere are dropped.
#pragma once

#include "targets/retrying_target.h"

namespace webhooker {

class HttpTarget final : public RetryingTarget {
 public:
  using RetryingTarget::RetryingTarget;

 protected:
  Result<OutboundRequest> buildRequest(const DeliveryContext& context, const Task& task) override;
};

// The event's headers minus those that describe the inbound connection:
// hop-by-hop ones always, the forwarding ones (Forwarded, X-Forwarded-*,
// X-Real-IP, Via: what the sender's proxies say of it) unless `forwarding`.
HeaderList forwardableHeaders(const HeaderList& headers, bool forwarding);

}  // namespace webhooker
