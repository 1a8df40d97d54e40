// RawConnection: one TCP connection to 127.0.0.1:<port> that writes bytes
// exactly as given and reads answers as they come, for the front door's
// tests (slow clients, framing, pipelining): what a client library would
// tidy up or refuse to send.
//
// Every read waits at most the timeout given (generous: the machine is
// shared); nothing here measures time. Threading: one thread per object.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace webhooker::testing {

// One answer: its status and the parts the tests look at.
struct RawAnswer {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;
  bool closes() const { return head.find("\r\nConnection: close\r\n") != std::string::npos; }
};

class RawConnection {
 public:
  explicit RawConnection(int port);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // False once the server has closed (or reset) the connection.
  bool send(std::string_view bytes);

  // The next whole answer (head and Content-Length body); nullopt if the
  // connection ends first or `timeout` passes.
  std::optional<RawAnswer> read(std::chrono::milliseconds timeout = std::chrono::seconds(20));

  // True when the server closes the connection within `timeout` (anything
  // it still sends first is dropped).
  bool closedWithin(std::chrono::milliseconds timeout);

 private:
  // Reads what is there; false at the end of the stream or at the deadline.
  bool fill(std::chrono::steady_clock::time_point deadline);

  std::optional<RawAnswer> takeAnswer();

  const int fd_;
  std::string in_;
  bool ended_ = false;
};

}  // namespace webhooker::testing
