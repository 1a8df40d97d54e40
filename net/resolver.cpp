#include "net/resolver.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>

namespace webhooker {

namespace {

struct AddrinfoDeleter {
  void operator()(addrinfo* list) const { freeaddrinfo(list); }
};

std::optional<IpAddress> addressOf(const addrinfo& ai) {
  if (ai.ai_family == AF_INET && ai.ai_addrlen >= sizeof(sockaddr_in)) {
    sockaddr_in sin{};
    std::memcpy(&sin, ai.ai_addr, sizeof sin);  // copy: no aliasing casts
    std::array<std::uint8_t, 4> bytes{};
    std::memcpy(bytes.data(), &sin.sin_addr, bytes.size());
    return IpAddress::fromV4Bytes(bytes);
  }
  if (ai.ai_family == AF_INET6 && ai.ai_addrlen >= sizeof(sockaddr_in6)) {
    sockaddr_in6 sin6{};
    std::memcpy(&sin6, ai.ai_addr, sizeof sin6);
    std::array<std::uint8_t, 16> bytes{};
    std::memcpy(bytes.data(), &sin6.sin6_addr, bytes.size());
    return IpAddress::fromV6Bytes(bytes);
  }
  return std::nullopt;
}

}  // namespace

Result<std::vector<IpAddress>> SystemResolver::resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &raw);
  const std::unique_ptr<addrinfo, AddrinfoDeleter> list(raw);
  if (rc != 0) {
    // gai_strerror returns static text; EAI_SYSTEM's errno detail is not
    // worth a thread-unsafe strerror call here.
    return makeError(error_code::kDnsFailure, "cannot resolve " + host + ": " + gai_strerror(rc));
  }
  std::vector<IpAddress> addresses;
  for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    const auto address = addressOf(*ai);
    if (address && std::find(addresses.begin(), addresses.end(), *address) == addresses.end())
      addresses.push_back(*address);
  }
  if (addresses.empty()) return makeError(error_code::kDnsFailure, "cannot resolve " + host + ": no addresses");
  return addresses;
}

}  // namespace webhooker
