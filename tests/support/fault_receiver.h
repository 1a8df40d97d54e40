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

Fault respond(int status, std::vector<std::pair<std::string, std::string>> headers = {},
              std::string body = "ok");
Fault respondAfter(std::chrono::milliseconds delay, int status = 200);
Fault ofKind(Fault::Kind kind);
Fault neverAnswer();
Fault closeWithoutAnswer();
Fault resetWithoutAnswer();
// A `status` answer announcing `declared` body bytes that stops after `sent`.
Fault cutMidBody(int status, size_t declared, size_t sent, bool reset);
// `body` answered one byte every `interval`, status line and headers included.
Fault trickle(std::chrono::milliseconds interval, int status = 200, std::string body = "ok");
Fault hugeBody(size_t bytes, int status = 200);

}  // namespace fault

class FaultReceiver {
 public:
  FaultReceiver();
  ~FaultReceiver();

  FaultReceiver(const FaultReceiver&) = delete;
  FaultReceiver& operator=(const FaultReceiver&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path = "/") const;

  void push(Fault f);
  void script(std::vector<Fault> faults);
  void setDefault(Fault f);

  std::vector<ReceivedRequest> requests() const;
  size_t requestCount() const;
  bool waitForRequests(size_t n, std::chrono::milliseconds timeout) const;
  // When the client hung up on the answer to request `i` (0-based) while it
  // was held or trickled; nullopt while it has not (or the answer was sent).
  std::optional<SteadyTime> clientGoneAt(size_t i) const;
  bool waitForClientGone(size_t i, std::chrono::milliseconds timeout) const;

 private:
  void acceptLoop();

  // Waits up to `d` (or until shutdown); true unless shutting down.
  bool pause(std::chrono::milliseconds d);
  // Holds the connection until the client hangs up (true) or shutdown.
  bool holdUntilClientGone(int fd);

  void serve(int fd);

  // Sends `f`; true when the client hung up on a held or trickled answer.
  bool answer(int fd, Fault& f);

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
