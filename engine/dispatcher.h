// Dispatcher: how the HTTP surface hands work to the delivery engine.
//
// The events DB is the source of truth: a dispatcher may drop a task (a full
// queue, shutting down) without losing it, because the delivery row stays
// `pending` on disk and the sweep or the next start-up finds it again.
// Threading: every method is called from HTTP worker threads concurrently.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "targets/task.h"

namespace webhooker {

class Dispatcher {
 public:
  // Open while ingest may have committed deliveries it has not submitted
  // yet; closed when its last copy goes.
  using Handoff = std::shared_ptr<const void>;

  virtual ~Dispatcher() = default;
  // Ingest opens one before it queues an event's write and keeps it until
  // it has submitted what the commit stored (or learnt that nothing was), so
  // a delivery row never becomes visible before its handoff is open: the
  // engine's own scans wait for such handoffs instead of taking the row.
  virtual Handoff openHandoff() = 0;
  // Freshly committed deliveries.
  virtual void submit(std::vector<Task> tasks) = 0;
  // A target was changed, (de)activated or deleted, or its webhook moved:
  // forget cached state and pick up its waiting deliveries again (a
  // reactivated target resumes; one whose webhook moves out lets go of the
  // retries it holds).
  virtual void targetChanged(const std::string& webhookId, const std::string& targetId) = 0;
  // As targetChanged, for a target whose config (its receiver) changed:
  // what was learnt of the old receiver goes too, so its circuit breaker
  // starts closed. The cached config goes before the breaker does, so an
  // attempt that reads the target after the reset sends to the new one.
  virtual void receiverChanged(const std::string& webhookId, const std::string& targetId) = 0;
  // Attempts of the target running now (sent, not yet answered and queued
  // for recording): a webhook moving out waits for this to reach 0.
  virtual int attemptsInFlight(const std::string& targetId) const = 0;
};

}  // namespace webhooker
