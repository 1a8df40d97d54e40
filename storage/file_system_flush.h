// One flush for every file of a file system: syncfs(2) on a descriptor of
// the data folder. A commit round over many events DBs commits each without
// a flush of its own and then makes all of them durable with this one call
// (CommitThreads, "Flushing the file system"): one disk flush for the round,
// not one per file.
//
// It flushes whatever is written on that file system, the daemon's or not, so
// it is for a data folder on a file system of its own (`serve --flush-scope
// filesystem`); on a shared one it also waits for the others' writes.
// useFileSystemFlush() gives one to the process's commit threads.
//
// Ownership: holds the folder's descriptor until destroyed. Threading: flush()
// from any thread, concurrently.
#pragma once

#include <filesystem>
#include <memory>

#include "base/result.h"

namespace webhooker::storage {

class FileSystemFlush {
 public:
  // storage_error if `folder` cannot be opened.
  static Result<std::unique_ptr<FileSystemFlush>> open(const std::filesystem::path& folder);
  ~FileSystemFlush();
  FileSystemFlush(const FileSystemFlush&) = delete;
  FileSystemFlush& operator=(const FileSystemFlush&) = delete;

  // Returns once everything written so far on the folder's file system is on
  // disk; storage_error if the kernel reports a failed write-back on it since
  // the last call (of any file: it cannot say which).
  Result<void> flush();

 private:
  explicit FileSystemFlush(int fd) : fd_(fd) {}
  const int fd_;
};

// From now on every commit round of the process over two files or more ends
// with one flush of `folder`'s file system (CommitThreads::shared()).
// storage_error if the folder cannot be opened; nothing changes then.
Result<void> useFileSystemFlush(const std::filesystem::path& folder);

}  // namespace webhooker::storage
