// HttpTarget: forwards the stored request to config.url with the retry core.
// Original headers go along except hop-by-hop ones, Host and Content-Length;
// configured headers are added on top (and win).
#pragma once

#include "targets/retrying_target.h"

namespace webhooker {

class HttpTarget final : public RetryingTarget {
 public:
  using RetryingTarget::RetryingTarget;

 protected:
  Result<OutboundRequest> buildRequest(const DeliveryContext& context, const Task& task) override;
};

// The event's headers minus those that describe the inbound connection.
HeaderList forwardableHeaders(const HeaderList& headers);

}  // namespace webhooker
