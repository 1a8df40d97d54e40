// Reading a webhooker SQLite file directly, as an operator's sqlite3 would.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <filesystem>

namespace webhooker::testing {

// Opens `file` read-only. A read waits up to 5 s for a file the daemon holds
// alone for a moment (recovery, the sweep and retention read closed files
// in exclusive mode) instead of failing with "database is locked".
SQLite::Database openReadOnly(const std::filesystem::path& file);

}  // namespace webhooker::testing
