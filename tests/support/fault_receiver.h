// FaultReceiver: a hostile webhook receiver on 127.0.0.1:<any free port>,
// written on raw sockets because it must misbehave below HTTP, which
// cpp-httplib's server cannot: reset or close a connection in the middle
// of a response, never answer, trickle a response a byte at a time, send a
// 50 MB body, hang up without a word.
//
// Each request is read whole (request line, headers, Content-Length body),
// recorded as a ReceivedRequest (receiver.h) and answered by the next
// Fault of the script, or by the default (200 "ok") once the script is used
// up. Every answer carries "Connection: close" and each connection serves
// one request, so a fault never leaks into the next attempt. The receiver
// also notes when the client hung up on a held or trickled answer, so a
// test can see the exact moment the engine gave up.
//
// Shutdown is prompt: waits are on a condition variable the destructor
// signals, and it shuts every open socket down before joining.
//
// Threading: every method may be called from any thread; one accept thread
// and one thread per connection. mutex_ guards everything that changes
// after start.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/receiver.h"

namespace webhooker::testing {

// One scripted misbehaviour (or a plain answer).
struct Fault {
  enum class Kind {
    kRespond,             // status, headers, body after `delay`
    kNeverAnswer,         // read the request, send nothing, keep the connection open
    kCloseWithoutAnswer,  // read the request, close (FIN) without a byte
    kResetWithoutAnswer,  // read the request, reset (RST) without a byte
    kCutMidBody,          // headers announcing `declaredBytes`, `sentBytes` of body, then close
    kTrickle,             // the whole answer, one byte every `interval`
    kHugeBody,            // a `declaredBytes` body, streamed as fast as the client reads
  };
  Kind kind = Kind::kRespond;
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // e.g. {"Retry-After", "2"}
  std::string body = "ok";
  std::chrono::milliseconds delay{0};  // before the first byte of any answer
  size_t declaredBytes = 0;            // kCutMidBody, kHugeBody
  size_t sentBytes = 0;                // kCutMidBody
  bool reset = false;                  // kCutMidBody: RST instead of FIN
  std::chrono::milliseconds interval{1000};  // kTrickle
};

namespace fault {

inline Fault respond(int status, std::vector<std::pair<std::string, std::string>> headers = {},
                     std::string body = "ok") {
  Fault f;
  f.status = status;
  f.headers = std::move(headers);
  f.body = std::move(body);
  return f;
}
inline Fault respondAfter(std::chrono::milliseconds delay, int status = 200) {
  Fault f = respond(status);
  f.delay = delay;
  return f;
}
inline Fault ofKind(Fault::Kind kind) {
  Fault f;
  f.kind = kind;
  return f;
}
inline Fault neverAnswer() { return ofKind(Fault::Kind::kNeverAnswer); }
inline Fault closeWithoutAnswer() { return ofKind(Fault::Kind::kCloseWithoutAnswer); }
inline Fault resetWithoutAnswer() { return ofKind(Fault::Kind::kResetWithoutAnswer); }
// A `status` answer announcing `declared` body bytes that stops after `sent`.
inline Fault cutMidBody(int status, size_t declared, size_t sent, bool reset) {
  Fault f = ofKind(Fault::Kind::kCutMidBody);
  f.status = status;
  f.declaredBytes = declared;
  f.sentBytes = sent;
  f.reset = reset;
  return f;
}
// `body` answered one byte every `interval`, status line and headers included.
inline Fault trickle(std::chrono::milliseconds interval, int status = 200,
                     std::string body = "ok") {
  Fault f = ofKind(Fault::Kind::kTrickle);
  f.status = status;
  f.body = std::move(body);
  f.interval = interval;
  return f;
}
inline Fault hugeBody(size_t bytes, int status = 200) {
  Fault f = ofKind(Fault::Kind::kHugeBody);
  f.status = status;
  f.declaredBytes = bytes;
  return f;
}

}  // namespace fault

class FaultReceiver {
 public:
  FaultReceiver() {
    listenFd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listenFd_ < 0) throw std::runtime_error("FaultReceiver: socket failed");
    const int one = 1;
    ::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = 0;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listenFd_, 64) != 0 ||
        ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ::close(listenFd_);
      throw std::runtime_error("FaultReceiver: cannot listen on loopback");
    }
    port_ = ntohs(addr.sin_port);
    acceptThread_ = std::thread([this] { acceptLoop(); });
  }

  ~FaultReceiver() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
    }
    wake_.notify_all();
    ::shutdown(listenFd_, SHUT_RDWR);  // accept() returns
    acceptThread_.join();
    ::close(listenFd_);
    for (std::thread& t : connections_) t.join();
  }

  FaultReceiver(const FaultReceiver&) = delete;
  FaultReceiver& operator=(const FaultReceiver&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

  void push(Fault f) {
    std::lock_guard lock(mutex_);
    script_.push_back(std::move(f));
  }
  void script(std::vector<Fault> faults) {
    std::lock_guard lock(mutex_);
    for (auto& f : faults) script_.push_back(std::move(f));
  }
  void setDefault(Fault f) {
    std::lock_guard lock(mutex_);
    default_ = std::move(f);
  }

  std::vector<ReceivedRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  size_t requestCount() const {
    std::lock_guard lock(mutex_);
    return requests_.size();
  }
  bool waitForRequests(size_t n, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
  }
  // When the client hung up on the answer to request `i` (0-based) while it
  // was held or trickled; nullopt while it has not (or the answer was sent).
  std::optional<SteadyTime> clientGoneAt(size_t i) const {
    std::lock_guard lock(mutex_);
    return i < goneAt_.size() ? goneAt_[i] : std::nullopt;
  }
  bool waitForClientGone(size_t i, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return i < goneAt_.size() && goneAt_[i]; });
  }

 private:
  static std::string reasonOf(int status) {
    switch (status) {
      case 200: return "OK";
      case 429: return "Too Many Requests";
      case 500: return "Internal Server Error";
      case 502: return "Bad Gateway";
      case 503: return "Service Unavailable";
      default: return "Status";
    }
  }
  static std::string head(const Fault& f, size_t contentLength) {
    std::string out = "HTTP/1.1 " + std::to_string(f.status) + " " + reasonOf(f.status) + "\r\n";
    for (const auto& [name, value] : f.headers) out += name + ": " + value + "\r\n";
    out += "Content-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
           std::to_string(contentLength) + "\r\n\r\n";
    return out;
  }
  static bool sendAll(int fd, const char* data, size_t size) {
    while (size > 0) {
      const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
      if (n <= 0) return false;
      data += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }
  // Reads one request; false if the client closed first or it was malformed.
  static bool readRequest(int fd, ReceivedRequest& r) {
    std::string data;
    char buf[16384];
    size_t headerEnd;
    while ((headerEnd = data.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0 || data.size() > 1024 * 1024) return false;
      data.append(buf, static_cast<size_t>(n));
    }
    size_t lineEnd = data.find("\r\n");
    const std::string requestLine = data.substr(0, lineEnd);
    const size_t sp1 = requestLine.find(' ');
    const size_t sp2 = requestLine.find(' ', sp1 + 1);
    if (sp1 == std::string::npos || sp2 == std::string::npos) return false;
    r.method = requestLine.substr(0, sp1);
    r.path = requestLine.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t contentLength = 0;
    for (size_t at = lineEnd + 2; at < headerEnd; at = lineEnd + 2) {
      lineEnd = data.find("\r\n", at);
      const std::string line = data.substr(at, lineEnd - at);
      const size_t colon = line.find(':');
      if (colon == std::string::npos) return false;
      size_t valueAt = colon + 1;
      while (valueAt < line.size() && line[valueAt] == ' ') ++valueAt;
      const std::string name = line.substr(0, colon);
      const std::string value = line.substr(valueAt);
      r.headers.emplace(name, value);
      if (::strcasecmp(name.c_str(), "Content-Length") == 0) contentLength = std::stoul(value);
    }
    r.body = data.substr(headerEnd + 4);
    while (r.body.size() < contentLength) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      r.body.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  void acceptLoop() {
    for (;;) {
      const int fd = ::accept(listenFd_, nullptr, nullptr);
      std::lock_guard lock(mutex_);
      if (stopping_) {
        if (fd >= 0) ::close(fd);
        return;
      }
      if (fd < 0) continue;
      open_.insert(fd);
      connections_.emplace_back([this, fd] { serve(fd); });
    }
  }

  // Waits up to `d` (or until shutdown); true unless shutting down.
  bool pause(std::chrono::milliseconds d) {
    std::unique_lock lock(mutex_);
    return !wake_.wait_for(lock, d, [&] { return stopping_; });
  }
  // Holds the connection until the client hangs up (true) or shutdown.
  bool holdUntilClientGone(int fd) {
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 10) > 0) {
        char c;
        if (::recv(fd, &c, 1, MSG_DONTWAIT) <= 0) return true;
      }
      std::lock_guard lock(mutex_);
      if (stopping_) return false;
    }
  }

  void serve(int fd) {
    ReceivedRequest r;
    const bool ok = readRequest(fd, r);
    Fault f;
    size_t index = 0;
    {
      std::lock_guard lock(mutex_);
      if (ok) {
        r.at = std::chrono::steady_clock::now();
        index = requests_.size();
        requests_.push_back(std::move(r));
        goneAt_.emplace_back();
        if (!script_.empty()) {
          f = std::move(script_.front());
          script_.pop_front();
        } else {
          f = default_;
        }
      }
    }
    changed_.notify_all();
    bool gone = false;
    if (ok && pause(f.delay)) gone = answer(fd, f);
    {
      std::lock_guard lock(mutex_);
      if (ok && gone) goneAt_[index] = std::chrono::steady_clock::now();
      open_.erase(fd);
      if (ok && f.reset) {
        const linger hard{1, 0};  // close() sends RST
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
      }
      ::close(fd);
    }
    changed_.notify_all();
  }

  // Sends `f`; true when the client hung up on a held or trickled answer.
  bool answer(int fd, Fault& f) {
    using K = Fault::Kind;
    switch (f.kind) {
      case K::kRespond: {
        const std::string out = head(f, f.body.size()) + f.body;
        sendAll(fd, out.data(), out.size());
        return false;
      }
      case K::kNeverAnswer: return holdUntilClientGone(fd);
      case K::kCloseWithoutAnswer: return false;
      case K::kResetWithoutAnswer: f.reset = true; return false;
      case K::kCutMidBody: {
        const std::string out = head(f, f.declaredBytes) + std::string(f.sentBytes, 'x');
        sendAll(fd, out.data(), out.size());
        // Let the client read what was sent before the connection goes.
        pause(std::chrono::milliseconds(20));
        return false;
      }
      case K::kTrickle: {
        const std::string out = head(f, f.body.size()) + f.body;
        for (char c : out) {
          if (!sendAll(fd, &c, 1)) return true;
          if (!pause(f.interval)) return false;
          pollfd p{fd, POLLIN, 0};
          char probe;
          if (::poll(&p, 1, 0) > 0 && ::recv(fd, &probe, 1, MSG_DONTWAIT) <= 0) return true;
        }
        return false;
      }
      case K::kHugeBody: {
        const std::string chunk(64 * 1024, 'x');
        std::string out = head(f, f.declaredBytes);
        if (!sendAll(fd, out.data(), out.size())) return true;
        for (size_t left = f.declaredBytes; left > 0;) {
          const size_t n = std::min(left, chunk.size());
          if (!sendAll(fd, chunk.data(), n)) return true;
          left -= n;
        }
        return false;
      }
    }
    return false;
  }

  int listenFd_ = -1;
  int port_ = 0;

  mutable std::mutex mutex_;  // guards everything below but the threads
  mutable std::condition_variable changed_;  // a request arrived or a client hung up
  std::condition_variable wake_;             // stopping_ became true
  std::deque<Fault> script_;
  Fault default_;
  std::vector<ReceivedRequest> requests_;
  std::vector<std::optional<SteadyTime>> goneAt_;
  std::set<int> open_;  // connection sockets, shut down by the destructor
  bool stopping_ = false;

  std::vector<std::thread> connections_;  // appended by the accept thread under mutex_
  std::thread acceptThread_;              // last: started after everything it touches exists
};

}  // namespace webhooker::testing
