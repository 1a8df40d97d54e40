// deliverAndWait: calls Target::deliver() the way the engine does and
// returns once the attempt is finished — its result written — which may be
// after deliver() itself returned (see AttemptHold in targets/target.h).
#pragma once

#include <future>
#include <memory>

#include "targets/target.h"

namespace webhooker::testing {

inline void deliverAndWait(Target& target, DeliveryContext context, Task task) {
  std::promise<void> released;
  std::future<void> finished = released.get_future();
  context.hold = std::shared_ptr<const int>(new int(0), [&released](const int* p) {
    delete p;
    released.set_value();
  });
  target.deliver(context, std::move(task));
  context.hold.reset();
  finished.wait();
}

}  // namespace webhooker::testing
