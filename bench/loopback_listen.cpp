#include "bench/loopback_listen.h"

#include <sys/socket.h>

#include <stdexcept>

namespace webhooker::bench {

int bindLoopbackWithFullBacklog(httplib::Server& server) {
  socket_t listening = INVALID_SOCKET;
  server.set_socket_options([&listening](socket_t sock) {
    httplib::default_socket_options(sock);
    listening = sock;
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  server.set_socket_options(httplib::default_socket_options);
  // A second listen() on a listening socket sets its backlog anew.
  if (port <= 0 || listening == INVALID_SOCKET || ::listen(listening, SOMAXCONN) != 0)
    throw std::runtime_error("cannot listen on 127.0.0.1");
  return port;
}

}  // namespace webhooker::bench
