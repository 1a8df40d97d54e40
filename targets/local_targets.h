// The fire-and-forget targets: one attempt each, always successful unless
// the result cannot be written, timed by the target itself so their result
// rows and the duration histogram carry real numbers.
//
//   database  the event is already stored; the attempt records that.
//   log       writes one structured line per event to the daemon's log.
#pragma once

#include "targets/target.h"

namespace webhooker {

class DatabaseTarget final : public Target {
 public:
  void deliver(const DeliveryContext& context, Task task) override;
};

class LogTarget final : public Target {
 public:
  static constexpr size_t kMaxLoggedBody = 1024;
  void deliver(const DeliveryContext& context, Task task) override;
};

}  // namespace webhooker
