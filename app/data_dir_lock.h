// One daemon per data folder: `webhooker serve` holds an exclusive flock on
// the data folder itself (its directory, opened once) for its whole life, so
// a second daemon on the same folder refuses to start. The lock is on the
// folder's inode, not on a name in it: renaming or deleting a file in the
// folder, or the folder itself, cannot free it while the daemon runs.
// <data>/webhooker.lock carries the holder's pid, only so that the refusal
// can name it. The kernel drops the lock when the process ends, however it
// ends, so a kill -9 leaves no stale lock behind.
// Commands that may run beside the daemon (backup, migrate, admin-token, the
// API clients) do not take it.
//
// Ownership: the lock lives as long as the object (move-only).
#pragma once

#include <filesystem>

#include "base/result.h"

namespace webhooker::app {

class DataDirLock {
 public:
  // "data_dir_locked" naming the holder's pid when another process holds
  // it; "storage_error" when the folder cannot be opened or locked, or the
  // pid file cannot be written.
  static Result<DataDirLock> acquire(const std::filesystem::path& dataDir);

  DataDirLock(DataDirLock&& other) noexcept;
  DataDirLock& operator=(DataDirLock&&) = delete;
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;
  ~DataDirLock();

 private:
  explicit DataDirLock(int folderFd) : folderFd_(folderFd) {}
  int folderFd_;  // the data folder, flocked
};

}  // namespace webhooker::app
