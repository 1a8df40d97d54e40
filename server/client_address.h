// The address an event records as its sender. From a trusted proxy
// (--trusted-proxies) it is the right-most hop of X-Forwarded-For that is not
// itself a trusted proxy: hops to its left were written by the client and
// prove nothing. From anyone else the header is ignored: it is whatever the
// sender wrote. A hop must be written the standard way (no leading zeros,
// no octal or hex parts); IPv4-mapped IPv6 forms, of a peer, a hop or a
// trusted network, are the IPv4 addresses they carry.
//
// Pure functions, any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip_address.h"

namespace webhooker::server {

bool isTrustedProxy(const IpAddress& peer, std::span<const Cidr> trusted);

// `forwardedFor`: every X-Forwarded-For value in arrival order (each a
// comma-separated list of addresses). Walking from the right, a hop that is
// not an address ends the walk at the hop to its right (the proxy that added
// it); when every hop is trusted, the left-most is the client.
// What the per-address connection cap counts a peer as: an IPv4 address,
// or an IPv6 address's /64.
std::string connectionCapKey(const IpAddress& peer);

std::string clientAddress(const IpAddress& peer, std::span<const std::string> forwardedFor,
                          std::span<const Cidr> trusted);

}  // namespace webhooker::server
