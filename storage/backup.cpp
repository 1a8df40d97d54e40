#include "storage/backup.h"

#include <fmt/format.h>
#include <SQLiteCpp/Backup.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/private_folder.h"
#include "storage/sqlite_database.h"

namespace webhooker {

namespace {

namespace fs = std::filesystem;

constexpr const char* kMainDb = "webhooker.db";

bool isEventsDbName(const std::string& name) {
  return name.size() > 10 && name.rfind("events-", 0) == 0 &&
         name.compare(name.size() - 3, 3, ".db") == 0;
}

Error invalidArgument(std::string message) {
  return makeError(error_code::kInvalidArgument, std::move(message));
}

// Refuses anything but a missing or empty folder; creates a missing one and
// tightens an existing one to 0700 before anything is copied into it.
// `created` tells the caller whether to remove it again on failure.
Result<void> prepareTarget(const fs::path& target, bool& created) {
  std::error_code ec;
  created = !fs::exists(target, ec);
  if (!created) {
    if (!fs::is_directory(target, ec))
      return invalidArgument(target.string() + " exists and is not a folder");
    if (!fs::is_empty(target, ec) || ec)
      return invalidArgument(target.string() +
                             " is not empty; back up into a new or empty folder");
  }
  return ensurePrivateFolder(target);
}

// One consistent snapshot of `source` into `copy`: read-only on the source,
// all pages in one step (a step-by-step copy would restart whenever the
// daemon writes). Written under a ".partial" name first, so an interrupted
// backup never leaves a file that looks complete.
void copyDatabase(const fs::path& source, const fs::path& copy, int busyTimeoutMs) {
  fs::path partial = copy;
  partial += ".partial";
  {
    SQLite::Database from(source.string(), SQLite::OPEN_READONLY, busyTimeoutMs);
    SQLite::Database to(partial.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE,
                        busyTimeoutMs);
    SQLite::Backup backup(to, from);
    // The source's busy handler is not used by the backup: wait here.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(busyTimeoutMs);
    while (backup.executeStep(-1) != SQLITE_DONE) {
      if (std::chrono::steady_clock::now() >= deadline)
        throw SQLite::Exception(source.string() + " stayed locked", SQLITE_BUSY);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // The copy is one self-contained file: opening it (sqlite3, a check)
    // creates no -wal or -shm beside it. The daemon sets WAL again on open.
    to.exec("PRAGMA journal_mode = DELETE");
  }
  fs::rename(partial, copy);
}

}  // namespace

Result<std::vector<BackupFile>> backupDataDir(const fs::path& dataDir, const fs::path& targetDir,
                                              int busyTimeoutMs) {
  std::error_code ec;
  if (!fs::is_regular_file(dataDir / kMainDb, ec))
    return invalidArgument((dataDir / kMainDb).string() +
                           " does not exist; check --data-dir (or DATA_DIR)");

  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dataDir, ec)) {
    std::string name = entry.path().filename().string();
    if (isEventsDbName(name)) names.push_back(std::move(name));
  }
  if (ec)
    return makeError(error_code::kStorageError,
                     fmt::format("cannot list {}: {}", dataDir.string(), ec.message()));
  std::sort(names.begin(), names.end());
  names.push_back(kMainDb);  // last: see backup.h

  bool createdTarget = false;
  if (auto r = prepareTarget(targetDir, createdTarget); !r) return r.error();

  std::vector<BackupFile> copied;
  for (const std::string& name : names) {
    try {
      // A webhook deleted since the listing took its file with it.
      if (name != kMainDb && !fs::exists(dataDir / name)) continue;
      copyDatabase(dataDir / name, targetDir / name, busyTimeoutMs);
      copied.push_back({name, static_cast<int64_t>(fs::file_size(targetDir / name))});
    } catch (const std::exception& e) {
      if (name != kMainDb && !fs::exists(dataDir / name)) {  // deleted while we read it
        fs::remove(targetDir / (name + ".partial"), ec);
        continue;
      }
      // Leave nothing that could pass for a backup.
      for (const std::string& n : names) {
        fs::remove(targetDir / n, ec);
        fs::remove(targetDir / (n + ".partial"), ec);
      }
      if (createdTarget) fs::remove(targetDir, ec);
      Error error = storage::storageError("backup", e);
      error.message = fmt::format("{} ({})", error.message, name);
      return error;
    }
  }
  return copied;
}

}  // namespace webhooker
