// Dispatcher: where freshly committed deliveries are handed for delivery.
//
// The events DB is the source of truth: a dispatcher may drop a task (a full
// queue, shutting down) without losing it, because the delivery row stays
// `pending` on disk and start-up recovery finds it again.
// Threading: submit() is called from HTTP worker threads concurrently.
#pragma once

#include <vector>

#include "targets/task.h"

namespace webhooker {

class Dispatcher {
 public:
  virtual ~Dispatcher() = default;
  virtual void submit(std::vector<Task> tasks) = 0;
};

// Keeps nothing in memory: deliveries wait on disk, `pending`, until a
// delivering engine is running.
class StoreOnlyDispatcher final : public Dispatcher {
 public:
  void submit(std::vector<Task>) override {}
};

}  // namespace webhooker
