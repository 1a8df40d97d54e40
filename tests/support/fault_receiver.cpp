#include "tests/support/fault_receiver.h"

namespace webhooker::testing {

namespace fault {

Fault respond(int status, std::vector<std::pair<std::string, std::string>> headers,
              std::string body) {
  Fault f;
  f.status = status;
  f.headers = std::move(headers);
  f.body = std::move(body);
  return f;
}

Fault respondAfter(std::chrono::milliseconds delay, int status) {
  Fault f = respond(status);
  f.delay = delay;
  return f;
}

Fault ofKind(Fault::Kind kind) {
  Fault f;
  f.kind = kind;
  return f;
}

Fault neverAnswer() { return ofKind(Fault::Kind::kNeverAnswer); }
Fault closeWithoutAnswer() { return ofKind(Fault::Kind::kCloseWithoutAnswer); }
Fault resetWithoutAnswer() { return ofKind(Fault::Kind::kResetWithoutAnswer); }

Fault cutMidBody(int status, size_t declared, size_t sent, bool reset) {
  Fault f = ofKind(Fault::Kind::kCutMidBody);
  f.status = status;
  f.declaredBytes = declared;
  f.sentBytes = sent;
  f.reset = reset;
  return f;
}

Fault trickle(std::chrono::milliseconds interval, int status, std::string body) {
  Fault f = ofKind(Fault::Kind::kTrickle);
  f.status = status;
  f.body = std::move(body);
  f.interval = interval;
  return f;
}

Fault hugeBody(size_t bytes, int status) {
  Fault f = ofKind(Fault::Kind::kHugeBody);
  f.status = status;
  f.declaredBytes = bytes;
  return f;
}

}  // namespace fault

namespace {

std::string reasonOf(int status) {
  switch (status) {
    case 200: return "OK";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

std::string head(const Fault& f, size_t contentLength) {
  std::string out = "HTTP/1.1 " + std::to_string(f.status) + " " + reasonOf(f.status) + "\r\n";
  for (const auto& [name, value] : f.headers) out += name + ": " + value + "\r\n";
  out += "Content-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
         std::to_string(contentLength) + "\r\n\r\n";
  return out;
}

bool sendAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Reads one request; false if the client closed first or it was malformed.
bool readRequest(int fd, ReceivedRequest& r) {
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

}  // namespace

FaultReceiver::FaultReceiver() {
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

FaultReceiver::~FaultReceiver() {
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

std::string FaultReceiver::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void FaultReceiver::push(Fault f) {
  std::lock_guard lock(mutex_);
  script_.push_back(std::move(f));
}

void FaultReceiver::script(std::vector<Fault> faults) {
  std::lock_guard lock(mutex_);
  for (auto& f : faults) script_.push_back(std::move(f));
}

void FaultReceiver::setDefault(Fault f) {
  std::lock_guard lock(mutex_);
  default_ = std::move(f);
}

std::vector<ReceivedRequest> FaultReceiver::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

size_t FaultReceiver::requestCount() const {
  std::lock_guard lock(mutex_);
  return requests_.size();
}

bool FaultReceiver::waitForRequests(size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
}

std::optional<SteadyTime> FaultReceiver::clientGoneAt(size_t i) const {
  std::lock_guard lock(mutex_);
  return i < goneAt_.size() ? goneAt_[i] : std::nullopt;
}

bool FaultReceiver::waitForClientGone(size_t i, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return i < goneAt_.size() && goneAt_[i]; });
}

void FaultReceiver::acceptLoop() {
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

bool FaultReceiver::pause(std::chrono::milliseconds d) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, d, [&] { return stopping_; });
}

bool FaultReceiver::holdUntilClientGone(int fd) {
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

void FaultReceiver::serve(int fd) {
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

bool FaultReceiver::answer(int fd, Fault& f) {
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

}  // namespace webhooker::testing
