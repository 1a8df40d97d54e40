// FailureReason: why a delivery ended failed (dead-lettered).
//
// The events DB stores it as TEXT in deliveries.failure_reason, and the same
// words are the API's, the operational events' and the dead-letter metric's
// `reason` label: "http_<status>" (a 3xx or 4xx answer that is not retried),
// "max_attempts", "blocked_destination", "invalid_config", "target_deleted",
// "transform_failed", "tls_failed" and "auth_failed". Those words must not
// change: stored rows, dashboards and alerts use them. Code passes the value
// around and converts only where the text is written, logged or shown.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace webhooker {

enum class FailureKind {
  kHttpStatus,  // the receiver's final answer (FailureReason::httpStatus)
  kMaxAttempts,
  kBlockedDestination,
  kInvalidConfig,
  kTargetDeleted,
  kTransformFailed,
  kTlsFailed,
  kAuthFailed,
};

class FailureReason {
 public:
  constexpr FailureReason(FailureKind kind) : kind_(kind) {}  // NOLINT: a kind is a reason
  static constexpr FailureReason httpStatus(int status) {
    FailureReason r(FailureKind::kHttpStatus);
    r.status_ = status;
    return r;
  }
  constexpr FailureKind kind() const { return kind_; }
  constexpr int status() const { return status_; }  // kHttpStatus only; else 0
  friend constexpr bool operator==(const FailureReason&, const FailureReason&) = default;

 private:
  FailureKind kind_;
  int status_ = 0;
};

// The stored and shown word (not named toString: doctest finds that name by
// argument-dependent lookup).
inline std::string failureReasonWord(FailureReason reason) {
  switch (reason.kind()) {
    case FailureKind::kHttpStatus: return "http_" + std::to_string(reason.status());
    case FailureKind::kMaxAttempts: return "max_attempts";
    case FailureKind::kBlockedDestination: return "blocked_destination";
    case FailureKind::kInvalidConfig: return "invalid_config";
    case FailureKind::kTargetDeleted: return "target_deleted";
    case FailureKind::kTransformFailed: return "transform_failed";
    case FailureKind::kTlsFailed: return "tls_failed";
    case FailureKind::kAuthFailed: return "auth_failed";
  }
  return "max_attempts";  // not reached: the switch names every kind
}

}  // namespace webhooker
