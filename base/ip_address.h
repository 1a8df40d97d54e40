// IpAddress and Cidr: the address vocabulary of the SSRF guard and of the front
// door (trusted proxies, the per-address connection cap).
//
// IpAddress::parse accepts every spelling a resolver or a browser would turn
// into an address, because an attacker will use whichever one a guard forgets:
//   IPv4  the inet_aton forms — 1 to 4 dot-separated parts, each decimal,
//         octal (leading 0) or hex (0x); the last part fills the remaining
//         bytes: "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.1".
//         Unlike inet_aton, nothing may follow (no trailing space or text).
//   IPv6  what inet_pton(AF_INET6) accepts, including "::ffff:1.2.3.4".
//         A zone id ("fe80::1%eth0") is refused, not stripped: zones only
//         mean something for link-local and multicast scopes, which are never
//         valid destinations, and dropping it would silently change the
//         address the caller meant.
// Brackets are not part of an address; the URL parser removes them.
//
// Plain values: copyable, no shared state, safe to use from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace webhooker {

class IpAddress {
 public:
  enum class Family : std::uint8_t { kV4, kV6 };

  IpAddress() = default;  // 0.0.0.0

  static IpAddress fromV4(std::uint32_t hostOrder);
  static IpAddress fromV4Bytes(const std::array<std::uint8_t, 4>& networkOrder);
  static IpAddress fromV6Bytes(const std::array<std::uint8_t, 16>& networkOrder);

  // nullopt for anything that is not exactly one address (see above).
  static std::optional<IpAddress> parse(std::string_view text);
  // Only the standard spellings, for addresses others wrote in a header
  // (X-Forwarded-For): IPv4 as four decimal parts without leading zeros,
  // IPv6 as inet_pton reads it. "010.1.1.1" is refused, not read as octal:
  // whoever wrote it may have meant 10.1.1.1, and a proxy may log that.
  static std::optional<IpAddress> parseStandard(std::string_view text);

  Family family() const { return family_; }
  bool isV4() const { return family_ == Family::kV4; }
  bool isV6() const { return family_ == Family::kV6; }
  // Network byte order; an IPv4 address uses the first 4 bytes, the rest are 0.
  const std::array<std::uint8_t, 16>& bytes() const { return bytes_; }
  // The IPv4 address in host order; only meaningful when isV4().
  std::uint32_t v4Value() const;

  // The IPv4 address an IPv6 address carries, for the forms that deliver to
  // (or are translated to) that IPv4 address, so they are checked as it:
  //   ::ffff:a.b.c.d        IPv4-mapped (a dual-stack socket connects to a.b.c.d)
  //   ::a.b.c.d             IPv4-compatible (deprecated); not :: and ::1,
  //                         which are the unspecified and loopback addresses
  //   ::ffff:0:a.b.c.d      IPv4-translated (SIIT, RFC 2765)
  //   64:ff9b::a.b.c.d      NAT64 well-known prefix (RFC 6052)
  //   2002:AABB:CCDD::/48   6to4 (RFC 3056), the IPv4 in bits 16..47
  // nullopt for an IPv4 address and every other IPv6 address.
  std::optional<IpAddress> embeddedIpv4() const;
  // An IPv4-mapped address (::ffff:a.b.c.d) as the IPv4 address it is, the
  // way a dual-stack socket reports a peer; any other address as itself.
  IpAddress unmapped() const;

  // Dotted quad, or inet_ntop's compressed IPv6 form ("::ffff:127.0.0.1").
  std::string toString() const;

  friend bool operator==(const IpAddress&, const IpAddress&) = default;

 private:
  std::array<std::uint8_t, 16> bytes_{};
  Family family_ = Family::kV4;
};

// A network: an address and a prefix length. Contains only addresses of its
// own family; embedded IPv4 forms are the SsrfGuard's business, not this one's.
struct Cidr {
  IpAddress net;
  int prefix = 0;  // 0..32 for IPv4, 0..128 for IPv6

  // "10.0.0.0/8", "fc00::/7"; a bare address means just that address (/32 or
  // /128). The address part takes any IpAddress::parse spelling. nullopt for
  // a bad prefix, or host bits set past it ("10.0.0.1/8"): that is usually a
  // typo, and guessing which half was meant could open the wrong range.
  static std::optional<Cidr> parse(std::string_view text);
  // The network of the first `prefix` bits of `address` ("2001:db8::1", 64
  // → 2001:db8::/64).
  static Cidr around(const IpAddress& address, int prefix);
  // "10.0.0.0/8,127.0.0.1/32, ::1/128" → networks (the operator's
  // --allow-networks and --trusted-proxies). Spaces around entries and empty
  // entries are ignored; "" is the empty list. A bad entry → "invalid_config"
  // naming it.
  static Result<std::vector<Cidr>> parseList(std::string_view commaSeparated);

  bool contains(const IpAddress& address) const;
  // An IPv4-mapped network (::ffff:a.b.c.d/96 and longer) as the IPv4
  // network it is; any other network as itself.
  Cidr unmapped() const;
  std::string toString() const;

  friend bool operator==(const Cidr&, const Cidr&) = default;
};

}  // namespace webhooker
