#include "server/move_fence.h"

#include "server/json_io.h"

namespace webhooker::server {

void MoveFence::guard(const std::string& webhookId, HttpResponse& res,
                      const std::function<void()>& write) {
  {
    MutexLock lock(mutex_);
    ++writesRunning_[webhookId];
  }
  // Counted out even if `write` throws, or a move of the webhook would wait forever.
  struct Leave {
    MoveFence& fence;
    const std::string& webhookId;
    ~Leave() {
      MutexLock lock(fence.mutex_);
      if (--fence.writesRunning_[webhookId] == 0) fence.writesRunning_.erase(webhookId);
      fence.writeEnded_.notify_all();
    }
  } leave{*this, webhookId};
  const auto webhook = store_.getWebhook(webhookId);
  if (webhook && webhook->movingTo)
    return sendError(res, 409, error_code::kWebhookMoving,
                     "the webhook is moving to node " + *webhook->movingTo +
                         ": change it there once the move is done, or roll the move back");
  write();
}

Result<void> MoveFence::startMove(const std::string& webhookId, const std::string& node) {
  MutexLock lock(mutex_);
  writeEnded_.wait(lock, [&]() REQUIRES(mutex_) { return !writesRunning_.count(webhookId); });
  return store_.setWebhookMovingTo(webhookId, node);
}

}  // namespace webhooker::server
