// One daemon per data folder: `webhooker serve` holds an exclusive flock on
// <data>/webhooker.lock for its whole life, with its pid written inside, so a
// second daemon on the same folder refuses to start and names the first.
// The kernel drops the lock when the process ends, however it ends, so a
// kill -9 leaves no stale lock behind (the file stays, unlocked).
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
  // it; "storage_error" when the lock file cannot be opened or written.
  static Result<DataDirLock> acquire(const std::filesystem::path& dataDir);

  DataDirLock(DataDirLock&& other) noexcept;
  DataDirLock& operator=(DataDirLock&&) = delete;
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;
  ~DataDirLock();

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace webhooker::app
