// Binding a cpp-httplib server to loopback with a full listen backlog.
// Header-only: the benchmarks (bench/) use it too, without the test support
// library.
#pragma once

#include <httplib.h>
#include <sys/socket.h>

namespace webhooker::testing {

// Binds `server` to 127.0.0.1:`port` (0: a free port) and returns the port,
// or -1 if it cannot. cpp-httplib listens with a backlog of 5: when more
// connections open at once, the kernel drops the SYNs past it and each of
// those clients tries again a second later, a stall of the test or the
// bench rather than of what it looks at. The backlog is raised to SOMAXCONN
// (a second listen() on a listening socket sets it anew).
inline int bindLoopbackWithFullBacklog(httplib::Server& server, int port = 0) {
  socket_t listening = INVALID_SOCKET;
  server.set_socket_options([&listening](socket_t sock) {
    httplib::default_socket_options(sock);
    listening = sock;
  });
  const int bound = port == 0 ? server.bind_to_any_port("127.0.0.1")
                              : (server.bind_to_port("127.0.0.1", port) ? port : -1);
  server.set_socket_options(httplib::default_socket_options);
  if (bound <= 0 || listening == INVALID_SOCKET || ::listen(listening, SOMAXCONN) != 0) return -1;
  return bound;
}

}  // namespace webhooker::testing
