#include "app/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace webhooker::app {

namespace {

constexpr const char* kPidFile = "webhooker.lock";

// The pid the holder wrote, as text; "unknown" if the file is gone or says
// nothing.
std::string holderOf(int folderFd) {
  const int fd = ::openat(folderFd, kPidFile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "unknown";
  char buffer[32] = {};
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  ::close(fd);
  std::string pid(buffer, n > 0 ? static_cast<size_t>(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "unknown" : pid;
}

}  // namespace

Result<DataDirLock> DataDirLock::acquire(const std::filesystem::path& dataDir) {
  const auto failed = [&](const char* what, const std::filesystem::path& path) {
    return makeError(error_code::kStorageError,
                     std::string("cannot ") + what + " " + path.string() + ": " +
                         std::strerror(errno));
  };
  const int folderFd = ::open(dataDir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folderFd < 0) return failed("open", dataDir);
  DataDirLock lock(folderFd);
  if (::flock(folderFd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return failed("lock", dataDir);
    return makeError(error_code::kDataDirLocked,
                     "another webhooker (pid " + holderOf(folderFd) + ") is already serving " +
                         dataDir.string() + "; stop it first, or use another --data-dir");
  }
  const std::filesystem::path pidFile = dataDir / kPidFile;
  const int fd = ::openat(folderFd, kPidFile,
                          O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return failed("open", pidFile);
  const std::string pid = std::to_string(::getpid()) + "\n";
  const bool written = ::write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size());
  ::close(fd);
  if (!written) return failed("write", pidFile);
  return Result<DataDirLock>(std::move(lock));
}

DataDirLock::DataDirLock(DataDirLock&& other) noexcept
    : folderFd_(std::exchange(other.folderFd_, -1)) {}

DataDirLock::~DataDirLock() {
  if (folderFd_ >= 0) ::close(folderFd_);  // releases the lock
}

}  // namespace webhooker::app
