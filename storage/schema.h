// Bringing database files to the binary's schema without serving:
// `webhooker migrate`. The daemon does the same on every open.
#pragma once

#include <filesystem>

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

}  // namespace webhooker
