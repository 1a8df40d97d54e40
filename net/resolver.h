// Resolver: turns a host name into the addresses it stands for. The seam the
// SSRF guard resolves through, so tests can answer with whatever they like.
#pragma once

#include <string>
#include <vector>

#include "base/ip_address.h"
#include "base/result.h"

namespace webhooker {

class Resolver {
 public:
  virtual ~Resolver() = default;

  // Every address `host` resolves to, IPv4 and IPv6, without duplicates, in
  // the resolver's preference order (the first is the one to connect to).
  // Never empty on success. Errors: "dns_failure" with a message naming the
  // host. Implementations must be safe to call from many threads at once.
  virtual Result<std::vector<IpAddress>> resolve(const std::string& host) = 0;
};

// getaddrinfo(AF_UNSPEC, SOCK_STREAM): /etc/hosts, then DNS, ordered by
// RFC 6724 as the C library sorts them. Thread-safe (getaddrinfo is);
// stateless. Blocks for as long as the C library's lookup takes (resolv.conf
// timeouts and attempts), so callers on a deadline run it on a worker.
class SystemResolver final : public Resolver {
 public:
  Result<std::vector<IpAddress>> resolve(const std::string& host) override;
};

}  // namespace webhooker
