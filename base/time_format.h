// Times as stored and shown everywhere: ISO-8601 UTC with milliseconds,
// "2026-11-29T17:48:05.123Z". Text that sorts like the time it names, so
// the sqlite3 CLI can compare and order it directly.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace webhooker {

std::string formatTime(TimePoint t);

// Accepts the stored form and the common variants a user types
// ("2026-11-29T17:48:05Z", "2026-11-29T17:48:05.1+01:00", "2026-11-29").
// Returns nullopt for anything else.
std::optional<TimePoint> parseTime(std::string_view text);

}  // namespace webhooker
