// Admin API: the endpoint-health fields of a target (target_health_fields.h).
#include <fmt/format.h>

#include "server/request_fields.h"
#include "server/target_health_fields.h"

namespace webhooker::server {

namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr int64_t kMaxDisableAfterMs = int64_t{365} * 24 * 3600 * 1000;
constexpr int64_t kMaxProbeIntervalMs = int64_t{7} * 24 * 3600 * 1000;

Error invalidField(std::string message) {
  return makeError(error_code::kInvalidField, std::move(message));
}

}  // namespace

Result<EnableRequest> applyTargetHealthFields(const json& body, TargetRecord& target) {
  EnableRequest enable = EnableRequest::kNone;
  if (auto active = boolField(body, "active"); !active) {
    return active.error();
  } else if (active.value()) {
    enable = *active.value() ? EnableRequest::kEnable : EnableRequest::kDeactivate;
  }
  if (body.contains("state")) {
    const json& v = body["state"];
    const auto state = v.is_string() ? parseTargetState(v.get<std::string>()) : std::nullopt;
    if (!state || *state == TargetState::kDisabled)
      return invalidField("state must be \"active\" or \"inactive\" (the engine sets \"disabled\")");
    const EnableRequest asked =
        *state == TargetState::kActive ? EnableRequest::kEnable : EnableRequest::kDeactivate;
    if (enable != EnableRequest::kNone && enable != asked)
      return invalidField("state and active contradict each other");
    enable = asked;
  }
  if (enable != EnableRequest::kNone) target.active = enable == EnableRequest::kEnable;

  if (body.contains("ordering")) {
    const json& v = body["ordering"];
    const auto ordering = v.is_string() ? parseOrdering(v.get<std::string>()) : std::nullopt;
    if (!ordering) return invalidField("ordering must be \"parallel\" or \"fifo\"");
    target.health.ordering = *ordering;
  }
  auto disableAfter = intField(body, "disable_after",
                               TargetHealthPolicy::kMinDisableAfter.count(), kMaxDisableAfterMs);
  if (!disableAfter) return disableAfter.error();
  if (disableAfter.value()) target.health.disableAfter = milliseconds(*disableAfter.value());
  auto probeInterval = intField(body, "probe_interval",
                                TargetHealthPolicy::kMinProbeInterval.count(), kMaxProbeIntervalMs);
  if (!probeInterval) return probeInterval.error();
  if (probeInterval.value()) target.health.probeInterval = milliseconds(*probeInterval.value());
  auto autoResume = boolField(body, "auto_resume");
  if (!autoResume) return autoResume.error();
  if (autoResume.value()) target.health.autoResume = *autoResume.value();
  return enable;
}

void addTargetHealthView(const TargetRecord& target, json& view) {
  view["state"] = targetStateWord(target.state());
  view["disabled_reason"] =
      target.disabled ? json(disabledReasonWord(target.disabled->reason)) : json();
  view["disabled_at"] = target.disabled ? json(target.disabled->at) : json();
  view["ordering"] = orderingWord(target.health.ordering);
  view["disable_after"] = target.health.disableAfter.count();
  view["auto_resume"] = target.health.autoResume;
  view["probe_interval"] = target.health.probeInterval.count();
}

}  // namespace webhooker::server
