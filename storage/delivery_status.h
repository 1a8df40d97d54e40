// A delivery's status, stored as TEXT so the sqlite3 CLI reads it:
// pending -> (retrying ->)* delivered | failed.
#pragma once

namespace webhooker {

// Delivery statuses as stored (TEXT, readable in the sqlite3 CLI).
namespace delivery_status {
inline constexpr const char* kPending = "pending";
inline constexpr const char* kRetrying = "retrying";
inline constexpr const char* kDelivered = "delivered";
inline constexpr const char* kFailed = "failed";
}  // namespace delivery_status

}  // namespace webhooker
