// SlackTarget: posts {"text": ...} to a Slack-compatible incoming webhook,
// with the retry core. The message names the event's method, content type,
// time and size, and shows the body in a code block: pretty-printed when it
// is JSON (numbers as written), cut to kMaxBodyChars. Everything the sender
// wrote is escaped per Slack's mrkdwn rules (&, <, > as entities; no run of
// backticks can close the code block), so it is shown, never interpreted.
#pragma once

#include "targets/retrying_target.h"

namespace webhooker {

class SlackTarget final : public RetryingTarget {
 public:
  static constexpr size_t kMaxBodyChars = 3500;
  using RetryingTarget::RetryingTarget;

 protected:
  Result<OutboundRequest> buildRequest(const DeliveryContext& context, const Task& task) override;
};

// The message text for an event (exposed for tests).
std::string slackMessageText(const EventPayload& payload);

}  // namespace webhooker
