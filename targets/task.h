// Task: one delivery attempt to run, as the engine queues it. Carries what
// the attempt needs so the happy path reads nothing from the events DB; a
// body over kInlineBodyLimit is left out and read when the attempt runs.
#pragma once

#include <optional>
#include <string>

namespace webhooker {

struct Task {
  static constexpr size_t kInlineBodyLimit = 16 * 1024;

  std::string deliveryId;
  std::string eventId;
  std::string webhookId;
  std::string targetId;
  std::string targetType;
  int attempt = 1;  // the attempt number this task will make
  std::string method;
  std::string contentType;
  std::optional<std::string> body;  // set when the body is at most kInlineBodyLimit
};

}  // namespace webhooker
