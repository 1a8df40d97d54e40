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

// The pid the holder wrote, as text; "unknown" if the file says nothing.
std::string holderOf(int fd) {
  char buffer[32] = {};
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  std::string pid(buffer, n > 0 ? static_cast<size_t>(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "unknown" : pid;
}

}  // namespace

Result<DataDirLock> DataDirLock::acquire(const std::filesystem::path& dataDir) {
  const std::filesystem::path file = dataDir / "webhooker.lock";
  const auto failed = [&](const char* what) {
    return makeError(error_code::kStorageError,
                     std::string("cannot ") + what + " " + file.string() + ": " +
                         std::strerror(errno));
  };
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return failed("open");
  DataDirLock lock(fd);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return failed("lock");
    return makeError(error_code::kDataDirLocked, "another webhooker (pid " + holderOf(fd) +
                                                     ") is already serving " + dataDir.string() +
                                                     "; stop it first, or use another --data-dir");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    return failed("write");
  return Result<DataDirLock>(std::move(lock));
}

DataDirLock::DataDirLock(DataDirLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

DataDirLock::~DataDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace webhooker::app
