#include "tests/support/raw_connection.h"

namespace webhooker::testing {

RawConnection::RawConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
  if (fd_ < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd_);
    throw std::runtime_error("connect failed");
  }
}

RawConnection::~RawConnection() { ::close(fd_); }

bool RawConnection::send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::optional<RawAnswer> RawConnection::read(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (auto answer = takeAnswer()) return answer;
    if (!fill(deadline)) return std::nullopt;
  }
}

bool RawConnection::closedWithin(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (fill(deadline)) {
  }
  return ended_;
}

bool RawConnection::fill(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
  char buf[16384];
  const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
  if (n <= 0) {
    ended_ = true;
    return false;
  }
  in_.append(buf, static_cast<size_t>(n));
  return true;
}

std::optional<RawAnswer> RawConnection::takeAnswer() {
  const size_t headEnd = in_.find("\r\n\r\n");
  if (headEnd == std::string::npos || in_.compare(0, 9, "HTTP/1.1 ") != 0) return std::nullopt;
  RawAnswer answer;
  answer.head = in_.substr(0, headEnd + 2);
  answer.status = std::stoi(in_.substr(9, 3));
  size_t length = 0;
  if (const size_t at = answer.head.find("\r\nContent-Length: "); at != std::string::npos)
    length = std::stoul(answer.head.substr(at + 18));
  if (in_.size() < headEnd + 4 + length) return std::nullopt;
  answer.body = in_.substr(headEnd + 4, length);
  in_.erase(0, headEnd + 4 + length);
  return answer;
}

}  // namespace webhooker::testing
