// Masking a stored body: the values a webhook's mask pointers name become
// "[masked]". Pure; events_db_retention.cpp decides when and stores it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/json_pointer.h"

namespace webhooker {

inline constexpr const char* kMaskedValue = "[masked]";

struct MaskedBody {
  bool json = false;     // the body parsed as JSON (whatever its content type)
  bool changed = false;  // `body` differs from the input
  std::string body;      // when changed: compact JSON, member order kept
};

// Pointers that name nothing in the body are skipped. A body that is not
// JSON comes back with json=false and is left as it is.
MaskedBody maskJsonBody(std::string_view body, const std::vector<JsonPointer>& pointers);

}  // namespace webhooker
