// DeliveryStatus: where a delivery stands.
//
//   pending -> delivered | failed | retrying;  retrying -> delivered | failed | retrying
//
// The events DB stores it as TEXT ("pending", "retrying", "delivered",
// "failed") so the sqlite3 CLI reads it; the same words are the admin API's
// and the CLI's. Code passes the enum around and converts only where the text
// is read or written: inside storage/, and where the API parses or prints it.
#pragma once

#include <optional>
#include <string_view>

namespace webhooker {

enum class DeliveryStatus { kPending, kRetrying, kDelivered, kFailed };

// The stored and shown word. Not named toString: doctest finds that name by
// argument-dependent lookup and expects its own string type back.
constexpr std::string_view statusWord(DeliveryStatus status) {
  switch (status) {
    case DeliveryStatus::kPending: return "pending";
    case DeliveryStatus::kRetrying: return "retrying";
    case DeliveryStatus::kDelivered: return "delivered";
    case DeliveryStatus::kFailed: return "failed";
  }
  return "pending";  // not reached: the switch names every status
}

// nullopt for a word that is no status.
constexpr std::optional<DeliveryStatus> parseDeliveryStatus(std::string_view text) {
  for (DeliveryStatus s : {DeliveryStatus::kPending, DeliveryStatus::kRetrying,
                           DeliveryStatus::kDelivered, DeliveryStatus::kFailed})
    if (statusWord(s) == text) return s;
  return std::nullopt;
}

}  // namespace webhooker
