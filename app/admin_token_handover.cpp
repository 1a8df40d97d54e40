#include "app/admin_token_handover.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace webhooker::app {

namespace {

std::string notice(const std::string& token) {
  return "Admin token (shown once, only its hash is stored):\n  " + token +
         "\nUse it as:  export WEBHOOKER_TOKEN=" + token + "\n";
}

bool writeAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// A leftover file belongs to a token whose hash is gone (this one replaces
// it), so it is removed first; O_EXCL then guarantees a file of our own.
bool writeTokenFile(const std::filesystem::path& file, const std::string& token) {
  std::error_code ec;
  std::filesystem::remove(file, ec);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  const bool written = writeAll(fd, token + "\n") && ::fsync(fd) == 0;
  const int writeErrno = errno;
  ::close(fd);
  if (!written) {
    std::filesystem::remove(file, ec);
    errno = writeErrno;
  }
  return written;
}

}  // namespace

void handOverAdminToken(const std::string& token, const std::filesystem::path& dataDir) {
  for (FILE* terminal : {stdout, stderr}) {
    if (::isatty(::fileno(terminal)) != 1) continue;
    std::fputs(notice(token).c_str(), terminal);
    std::fflush(terminal);
    return;
  }
  const std::filesystem::path file = dataDir / kAdminTokenFile;
  if (!writeTokenFile(file, token)) {
    spdlog::error(
        "daemon.admin_token_not_written path={} error=\"{}\" hint=\"run webhooker admin-token "
        "--reset for a new token\"",
        file.string(), std::strerror(errno));
    return;
  }
  // Warn: the operator should read the file once and delete it.
  spdlog::warn("daemon.admin_token_written path={}", file.string());
}

}  // namespace webhooker::app
