#include "bench/blackhole.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace webhooker::bench {

Blackhole::Blackhole() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  auto* generic = reinterpret_cast<sockaddr*>(&addr);
  if (fd_ < 0 || ::bind(fd_, generic, length) != 0 || ::listen(fd_, 4096) != 0 ||
      ::getsockname(fd_, generic, &length) != 0)
    throw std::runtime_error("blackhole: cannot listen on 127.0.0.1");
  port_ = ntohs(addr.sin_port);
}

Blackhole::~Blackhole() { ::close(fd_); }

}  // namespace webhooker::bench
