#include "app/haproxy_runtime.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace webhooker::app {

namespace {

// HAProxy reads a command with its payload into one buffer (tune.bufsize,
// 16 KiB by default): payloads stay well below it.
constexpr size_t kPayloadBytes = 8 * 1024;

Result<void> writeFileAtomically(const std::filesystem::path& file, const std::string& text) {
  const std::filesystem::path temporary = file.string() + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return makeError(error_code::kStorageError,
                     "cannot write " + temporary.string() + ": " + std::strerror(errno));
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  const bool ok = written == text.size() && ::fsync(fd) == 0;
  ::close(fd);
  std::error_code ec;
  if (ok) std::filesystem::rename(temporary, file, ec);
  if (!ok || ec) {
    std::filesystem::remove(temporary, ec);
    return makeError(error_code::kStorageError, "cannot write " + file.string());
  }
  return {};
}

}  // namespace

HaproxyRuntime::HaproxyRuntime(std::filesystem::path socket) : socket_(std::move(socket)) {}

Result<std::string> HaproxyRuntime::command(const std::string& text) const {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_.string().size() >= sizeof address.sun_path)
    return makeError(error_code::kHaproxyUnreachable,
                     "the socket path is too long: " + socket_.string());
  std::strcpy(address.sun_path, socket_.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return makeError(error_code::kHaproxyUnreachable, std::strerror(errno));
  const auto fail = [&](const std::string& what) {
    const std::string why = what + " " + socket_.string() + ": " + std::strerror(errno);
    ::close(fd);
    return makeError(error_code::kHaproxyUnreachable, why);
  };
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    return fail("cannot connect to HAProxy's admin socket");
  const std::string line = text.ends_with("\n") ? text : text + "\n";
  size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = ::send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write to");
    sent += static_cast<size_t>(n);
  }
  // Without `prompt`, HAProxy answers one command and closes.
  std::string answer;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot read from");
    if (n == 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return answer;
}

Result<void> HaproxyRuntime::replaceMap(const std::filesystem::path& mapFile,
                                        const MapEntries& entries) const {
  std::string text = "# written by webhooker cluster sync: key backend\n";
  for (const auto& [key, value] : entries) text += key + " " + value + "\n";
  if (auto written = writeFileAtomically(mapFile, text); !written) return written.error();

  const std::string map = std::filesystem::absolute(mapFile).string();
  auto prepared = command("prepare map " + map);
  if (!prepared) return prepared.error();
  // "New version created: 3"
  const size_t colon = prepared->find("created: ");
  if (colon == std::string::npos)
    return makeError(error_code::kHaproxyError, "prepare map " + map + ": " + prepared.value());
  const std::string version = "@" + std::to_string(std::stoll(prepared->substr(colon + 9)));
  std::string payload;
  const auto flush = [&]() -> Result<void> {
    if (payload.empty()) return {};
    auto added = command("add map " + version + " " + map + " <<\n" + payload + "\n");
    payload.clear();
    if (!added) return added.error();
    if (added->find_first_not_of("\n") != std::string::npos)
      return makeError(error_code::kHaproxyError, "add map " + map + ": " + added.value());
    return {};
  };
  for (const auto& [key, value] : entries) {
    payload += key + " " + value + "\n";
    if (payload.size() >= kPayloadBytes)
      if (auto r = flush(); !r) return r.error();
  }
  if (auto r = flush(); !r) return r.error();
  auto committed = command("commit map " + version + " " + map);
  if (!committed) return committed.error();
  if (committed->find_first_not_of("\n") != std::string::npos)
    return makeError(error_code::kHaproxyError, "commit map " + map + ": " + committed.value());
  return {};
}

}  // namespace webhooker::app
