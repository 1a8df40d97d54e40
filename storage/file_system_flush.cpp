#include "storage/file_system_flush.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/error_codes.h"
#include "storage/commit_threads.h"

namespace webhooker::storage {

Result<std::unique_ptr<FileSystemFlush>> FileSystemFlush::open(
    const std::filesystem::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return makeError(error_code::kStorageError,
                     "cannot open " + folder.string() + ": " + std::strerror(errno));
  return std::unique_ptr<FileSystemFlush>(new FileSystemFlush(fd));
}

FileSystemFlush::~FileSystemFlush() { ::close(fd_); }

Result<void> FileSystemFlush::flush() {
  if (::syncfs(fd_) == 0) return {};
  return makeError(error_code::kStorageError,
                   std::string("storage flush failed: ") + std::strerror(errno));
}

Result<void> useFileSystemFlush(const std::filesystem::path& folder) {
  auto opened = FileSystemFlush::open(folder);
  if (!opened) return opened.error();
  std::shared_ptr<FileSystemFlush> flush = std::move(opened.value());
  CommitThreads::shared().flushFileSystemTogether([flush] { return flush->flush(); });
  return {};
}

}  // namespace webhooker::storage
