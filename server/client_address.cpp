#include "server/client_address.h"

#include <algorithm>

namespace webhooker::server {

namespace {

std::string_view trimmed(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

}  // namespace

bool isTrustedProxy(const IpAddress& peer, std::span<const Cidr> trusted) {
  const IpAddress address = peer.unmapped();
  return std::any_of(trusted.begin(), trusted.end(),
                     [&address](const Cidr& c) { return c.unmapped().contains(address); });
}

std::string connectionCapKey(const IpAddress& peer) {
  const IpAddress address = peer.unmapped();
  // One IPv6 host is usually given a whole /64: each address in it is no
  // other client.
  return address.isV4() ? address.toString() : Cidr::around(address, 64).toString();
}

std::string clientAddress(const IpAddress& peer, std::span<const std::string> forwardedFor,
                          std::span<const Cidr> trusted) {
  IpAddress client = peer;
  if (!isTrustedProxy(peer, trusted)) return client.toString();
  std::vector<std::string_view> hops;
  for (const std::string& value : forwardedFor)
    for (size_t at = 0; at <= value.size();) {
      const size_t comma = std::min(value.find(',', at), value.size());
      hops.push_back(trimmed(std::string_view(value).substr(at, comma - at)));
      at = comma + 1;
    }
  for (auto hop = hops.rbegin(); hop != hops.rend(); ++hop) {
    const auto address = IpAddress::parseStandard(*hop);
    if (!address) break;
    client = address->unmapped();
    if (!isTrustedProxy(client, trusted)) break;
  }
  return client.toString();
}

}  // namespace webhooker::server
