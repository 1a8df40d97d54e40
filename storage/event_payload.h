// EventPayload: what a delivery forwards of a stored event: the request as
// it came in, read from the events DB or carried inline by a Task. A plain
// value: copyable, no shared state.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace webhooker {

// Request headers as [name, value] pairs, names as sent.
using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct EventPayload {
  std::string method;
  HeaderList headers;
  std::string contentType;
  std::string body;  // raw bytes
  std::string receivedAt;
  std::optional<std::string> eventType;  // what its entrypoint's rule found
};

}  // namespace webhooker
