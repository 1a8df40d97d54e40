// The endpoint-health fields of a target in the admin API
// (docs/receiver-outages.md):
//   read and written: "ordering" ("parallel" | "fifo"), "disable_after" (ms,
//     60,000..365 days, default 5 days), "auto_resume" (bool),
//     "probe_interval" (ms, 1,000..7 days, default 1 h), and "state", which
//     an operator may set to "active" or "inactive" (like "active": true or
//     false); "disabled" is the engine's to set;
//   read only: "state", "disabled_reason" ("gone" | "failing" | null) and
//     "disabled_at".
// Enabling a disabled target is writing "active": true or "state": "active".
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <string_view>

#include "base/result.h"
#include "storage/records.h"

namespace webhooker::server {

// Only the targets that send and retry (http, slack and the queue types)
// have a circuit breaker; a pull target's consumer comes to us.
inline bool hasBreaker(const TargetRecord& t) {
  return t.type != TargetType::kDatabase && t.type != TargetType::kLog && !t.pulled();
}

inline constexpr std::array<std::string_view, 5> kTargetHealthFields = {
    "ordering", "disable_after", "auto_resume", "probe_interval", "state"};

// What the request asks of the target's enabled state.
enum class EnableRequest { kNone, kEnable, kDeactivate };

// Applies the health fields present in `body` onto `target` ("invalid_field"
// on a bad value, before anything is written). Sets target.active for a
// "state" and says whether the write enables or deactivates the target.
Result<EnableRequest> applyTargetHealthFields(const nlohmann::json& body, TargetRecord& target);

// Adds the health fields to a target's API view.
void addTargetHealthView(const TargetRecord& target, nlohmann::json& view);

}  // namespace webhooker::server
