// Bringing database files to the binary's schema without serving:
// `webhooker migrate`. The daemon does the same on every open.
#pragma once

#include <filesystem>
#include <string_view>

#include "base/result.h"
#include "storage/db_options.h"

namespace webhooker {

struct SchemaChange {
  int before = 0;  // version found on disk (0: new file)
  int after = 0;   // version now
};

enum class DbKind { kMain, kEvents };

// Opens (creating if needed), migrates and closes the file.
Result<SchemaChange> migrateFile(const std::filesystem::path& file, DbKind kind,
                                 const DbOptions& options);

// `CREATE TEMP VIEW IF NOT EXISTS delivery_history AS ...`: one readable row
// per event x target with its latest attempt (events with no target yet
// too, with NULL delivery columns), for the sqlite3 CLI: a TEMP view lives
// in the connection that makes it, never in the file, which SQLite would
// otherwise parse on every open (events migration 0009).
// `webhooker history-view` prints it.
std::string_view deliveryHistoryView();

}  // namespace webhooker
