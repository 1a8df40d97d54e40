// Receiver: a scriptable webhook receiver on 127.0.0.1:<any free port> — the
// real other end of an outbound delivery, for integration tests.
//
// It records every request (steady-clock arrival time, method, path,
// headers, body) and answers from a script: a FIFO of responses, each with a
// status, headers (Retry-After, Location, ...), a body and a delay before
// answering. Once the script is used up it answers with the default response
// (200 "ok" unless changed). A response may also "never answer": the handler
// holds the request until the receiver is destroyed, which is longer than
// any client timeout a test uses.
//
// Shutdown is prompt: delays and never-answers wait on a condition variable
// the destructor signals, and the server closes each connection after one
// request (no idle keep-alive connection can hold a server thread for
// cpp-httplib's 5 s keep-alive timeout).
//
// Threading: every method may be called from any thread; requests are served
// on cpp-httplib's pool (kServerThreads, so a few held requests never block
// the others). scriptMutex_ guards everything that changes after start.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace webhooker::testing {

using SteadyTime = std::chrono::steady_clock::time_point;

// One scripted answer.
struct ScriptedResponse {
  int status = 200;
  httplib::Headers headers;  // e.g. {{"Retry-After", "2"}}
  std::string body = "ok";
  std::string contentType = "text/plain";
  std::chrono::milliseconds delay{0};  // before answering
  bool neverAnswer = false;            // hold the request until the receiver goes away
  // Runs on the receiver's thread when the request has arrived, before it is
  // counted (requests(), waitForRequests()) or answered: the sender is still
  // waiting, so what it wrote before sending can be read without a race.
  std::function<void()> onArrival;
};

inline ScriptedResponse respond(int status, httplib::Headers headers = {}) {
  ScriptedResponse r;
  r.status = status;
  r.headers = std::move(headers);
  return r;
}
inline ScriptedResponse respondAfter(std::chrono::milliseconds delay, int status = 200) {
  ScriptedResponse r;
  r.status = status;
  r.delay = delay;
  return r;
}
inline ScriptedResponse neverAnswer() {
  ScriptedResponse r;
  r.neverAnswer = true;
  return r;
}

// One request as it arrived.
struct ReceivedRequest {
  SteadyTime at;
  std::string method;
  std::string path;
  httplib::Headers headers;  // case-insensitive names (cpp-httplib's multimap)
  std::string body;
  int answeredStatus = 0;  // the status the script chose for it

  bool hasHeader(const std::string& name) const { return headers.find(name) != headers.end(); }
  // The first value of `name`, or "" when absent.
  std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
  size_t headerCount(const std::string& name) const { return headers.count(name); }
};

// Milliseconds from `from` to `to` (negative if `to` is earlier).
inline long long msBetween(SteadyTime from, SteadyTime to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

// A loopback port nothing listens on: bound to get a free one, then closed.
// (Another process could take it in between; on a test machine it does not.)
inline int unusedLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("unusedLoopbackPort: socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("unusedLoopbackPort: bind failed");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

class Receiver {
 public:
  static constexpr size_t kServerThreads = 24;

  // port 0: any free port. A given port lets a test take a receiver down
  // and bring it back at the same URL (the socket is bound SO_REUSEADDR).
  explicit Receiver(int port = 0) {
    server_.set_tcp_nodelay(true);
    server_.set_keep_alive_max_count(1);  // see the file comment: prompt shutdown
    server_.set_payload_max_length(64 * 1024 * 1024);
    server_.new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
    server_.set_logger([](const httplib::Request&, const httplib::Response&) {});
    const auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      handle(req, res);
    };
    server_.Get(".*", handler);
    server_.Post(".*", handler);
    server_.Put(".*", handler);
    server_.Patch(".*", handler);
    server_.Delete(".*", handler);
    server_.Options(".*", handler);
    port_ = port == 0 ? server_.bind_to_any_port("127.0.0.1")
                      : (server_.bind_to_port("127.0.0.1", port) ? port : -1);
    if (port_ <= 0) throw std::runtime_error("Receiver: cannot bind a loopback port");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs: wait for it.
    for (int i = 0; i < 2000 && !server_.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!server_.is_running()) {
      server_.stop();
      thread_.join();
      throw std::runtime_error("Receiver: server did not start");
    }
  }

  ~Receiver() {
    {
      std::lock_guard lock(scriptMutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

  // Appends to the script.
  void push(ScriptedResponse response) {
    std::lock_guard lock(scriptMutex_);
    script_.push_back(std::move(response));
  }
  void script(std::vector<ScriptedResponse> responses) {
    std::lock_guard lock(scriptMutex_);
    for (auto& r : responses) script_.push_back(std::move(r));
  }
  // What to answer once the script is used up.
  void setDefault(ScriptedResponse response) {
    std::lock_guard lock(scriptMutex_);
    default_ = std::move(response);
  }
  // Drops what is left of the script (the default answers from now on).
  void clearScript() {
    std::lock_guard lock(scriptMutex_);
    script_.clear();
  }

  std::vector<ReceivedRequest> requests() const {
    std::lock_guard lock(scriptMutex_);
    return requests_;
  }
  size_t requestCount() const {
    std::lock_guard lock(scriptMutex_);
    return requests_.size();
  }
  // True once at least `n` requests arrived; false at the timeout.
  bool waitForRequests(size_t n, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(scriptMutex_);
    return arrived_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
  }
  // Requests being handled right now, and the most there ever were at once.
  int inFlight() const {
    std::lock_guard lock(scriptMutex_);
    return inFlight_;
  }
  int maxInFlight() const {
    std::lock_guard lock(scriptMutex_);
    return maxInFlight_;
  }

 private:
  void handle(const httplib::Request& req, httplib::Response& res) {
    ScriptedResponse answer;
    std::unique_lock lock(scriptMutex_);
    ReceivedRequest r;
    r.at = std::chrono::steady_clock::now();
    r.method = req.method;
    r.path = req.path;
    for (const auto& [name, value] : req.headers) {
      // cpp-httplib adds these itself; they describe the socket.
      if (name == "REMOTE_ADDR" || name == "REMOTE_PORT" || name == "LOCAL_ADDR" ||
          name == "LOCAL_PORT")
        continue;
      r.headers.emplace(name, value);
    }
    r.body = req.body;
    if (!script_.empty()) {
      answer = std::move(script_.front());
      script_.pop_front();
    } else {
      answer = default_;
    }
    r.answeredStatus = answer.neverAnswer ? 0 : answer.status;
    // Before the request counts as arrived: a test that waited for it also
    // sees what the hook did.
    if (answer.onArrival) {
      lock.unlock();
      answer.onArrival();
      lock.lock();
    }
    requests_.push_back(std::move(r));
    ++inFlight_;
    maxInFlight_ = std::max(maxInFlight_, inFlight_);
    arrived_.notify_all();
    if (answer.neverAnswer)
      wake_.wait(lock, [&] { return stopping_; });
    else if (answer.delay.count() > 0)
      wake_.wait_for(lock, answer.delay, [&] { return stopping_; });
    --inFlight_;
    lock.unlock();

    res.status = answer.status;
    for (const auto& [name, value] : answer.headers) res.set_header(name, value);
    res.set_content(answer.body, answer.contentType);
  }

  httplib::Server server_;
  int port_ = 0;

  mutable std::mutex scriptMutex_;  // guards script_, default_, requests_, inFlight_,
                                    // maxInFlight_ and stopping_
  mutable std::condition_variable arrived_;  // a request was recorded
  std::condition_variable wake_;             // stopping_ became true
  std::deque<ScriptedResponse> script_;
  ScriptedResponse default_;
  std::vector<ReceivedRequest> requests_;
  int inFlight_ = 0;
  int maxInFlight_ = 0;
  bool stopping_ = false;

  std::thread thread_;  // last: started after everything it touches exists
};

}  // namespace webhooker::testing
