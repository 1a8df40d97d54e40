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

ScriptedResponse respond(int status, httplib::Headers headers = {});
ScriptedResponse respondAfter(std::chrono::milliseconds delay, int status = 200);
ScriptedResponse neverAnswer();

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
int unusedLoopbackPort();

class Receiver {
 public:
  static constexpr size_t kServerThreads = 24;

  // port 0: any free port. A given port lets a test take a receiver down
  // and bring it back at the same URL (the socket is bound SO_REUSEADDR).
  explicit Receiver(int port = 0);
  ~Receiver();

  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path = "/") const;

  // Appends to the script.
  void push(ScriptedResponse response);
  void script(std::vector<ScriptedResponse> responses);
  // What to answer once the script is used up.
  void setDefault(ScriptedResponse response);
  // Drops what is left of the script (the default answers from now on).
  void clearScript();

  std::vector<ReceivedRequest> requests() const;
  size_t requestCount() const;
  // True once at least `n` requests arrived; false at the timeout.
  bool waitForRequests(size_t n, std::chrono::milliseconds timeout) const;
  // Requests being handled right now, and the most there ever were at once.
  int inFlight() const;
  int maxInFlight() const;

 private:
  void handle(const httplib::Request& req, httplib::Response& res);

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
