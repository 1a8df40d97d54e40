// MoveFence: an admin write to a webhook (its configuration or a redrive)
// and the start of that webhook's move never overlap. The write either ends
// before the source stops, and the move copies what it wrote, or it is
// refused with 409 webhook_moving and changes nothing (docs/decisions.md,
// *Cluster*). A write that had read "not moving" and committed after the
// move read the configuration would be lost with the source's copy.
//
// Threading: any thread. Writes to one webhook run side by side; a move's
// start waits for the ones running (held back meanwhile: one UPDATE).
#pragma once

#include <condition_variable>
#include <functional>
#include <string>
#include <unordered_map>

#include "base/mutex.h"
#include "base/result.h"
#include "server/http_message.h"
#include "storage/main_store.h"

namespace webhooker::server {

class MoveFence {
 public:
  explicit MoveFence(MainStore& store) : store_(store) {}

  // Runs `write` unless the webhook is moving out of this node; then
  // answers 409 webhook_moving instead. An unknown webhook runs `write`,
  // which answers its own 404.
  void guard(const std::string& webhookId, HttpResponse& res, const std::function<void()>& write)
      EXCLUDES(mutex_);

  // Marks the webhook as moving out to `node` once none of its writes runs.
  Result<void> startMove(const std::string& webhookId, const std::string& node) EXCLUDES(mutex_);

 private:
  MainStore& store_;
  Mutex mutex_;
  std::condition_variable_any writeEnded_;
  // Guarded writes running now, per webhook (absent: none).
  std::unordered_map<std::string, int> writesRunning_ GUARDED_BY(mutex_);
};

}  // namespace webhooker::server
