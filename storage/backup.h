// Backing up a data folder while the daemon runs: `webhooker backup`.
//
// Each file is copied with SQLite's online backup API in one step, which
// reads one consistent snapshot of it; in WAL mode that read does not stop
// the daemon's writers. Files are consistent one by one, not with each
// other: events DBs are copied first and webhooker.db last, so every target
// a copied delivery names is in the copied main DB.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/result.h"

namespace webhooker {

struct BackupFile {
  std::string name;   // the file's name, the same in the data folder and the copy
  int64_t bytes = 0;  // size of the copy
};

// Copies every events-<id>.db, then webhooker.db, from `dataDir` into
// `targetDir`, which is created, or tightened if it exists, to mode 0700 (the
// copies hold the admin token hash and target credentials) and must not hold
// anything yet. Errors:
// "invalid_argument" (no webhooker.db in `dataDir`, `targetDir` not an empty
// folder) with nothing written; "storage_error"/"storage_busy" for a copy
// that failed, after removing what it had copied. An events DB deleted while
// the backup runs (its webhook was deleted) is skipped.
Result<std::vector<BackupFile>> backupDataDir(const std::filesystem::path& dataDir,
                                              const std::filesystem::path& targetDir,
                                              int busyTimeoutMs = 5000);

}  // namespace webhooker
