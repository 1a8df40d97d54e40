// SsrfGuard: decides whether webhooker may send a request to a URL, so a
// webhook can never be pointed at our own host, the cloud metadata service
// or the private network (DESIGN.md §5).
//
// The host is resolved here, every address checked against the deny list
// (ssrf_guard.cpp, one commented table), and the address that passed is
// handed back: the caller connects to exactly that address (cpp-httplib's
// set_hostname_addr_map), so a second DNS answer cannot switch it (DNS
// rebinding). An IP literal, in any spelling inet_aton or inet_pton takes,
// is parsed and never sent to DNS. IPv6 forms that carry an IPv4 address
// (mapped, compatible, translated, NAT64, 6to4) are also checked as that
// IPv4 address. Names that are loopback by definition ("localhost",
// "*.localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")
// are answered here with the loopback addresses (RFC 6761 §6.3), never asked
// of the resolver.
//
// Errors:
//   "blocked_destination"  not http/https, an empty or malformed host, a
//                          numeric host that is no valid address, or any
//                          resolved address forbidden. The message names the
//                          host and the category ("loopback", "private", ...),
//                          never the internal address a name resolved to.
//   "dns_failure"          from the resolver, passed through unchanged.
//
// Threads: vet() and vetLiteral() are const and may be called from any
// number of threads at once; the resolver must be thread-safe. The guard
// keeps a reference to the resolver, which must outlive it.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "base/ip_address.h"
#include "base/result.h"
#include "base/url.h"
#include "net/resolver.h"

namespace webhooker {

// One range of the deny list: a network and the word the error uses for it.
struct DeniedNetwork {
  Cidr network;
  std::string_view category;
};

// The deny list, parsed once from the table in ssrf_guard.cpp (IPv4 and IPv6
// ranges; embedded IPv4 forms are checked against the IPv4 ones).
const std::vector<DeniedNetwork>& deniedNetworks();

class SsrfGuard {
 public:
  // `allowNetworks` (the operator's WEBHOOKER_ALLOW_NETWORKS) open ranges
  // the deny list would close; tests use it for loopback receivers.
  SsrfGuard(Resolver& resolver, std::vector<Cidr> allowNetworks);

  // Resolves url.host (or parses it, if a literal), checks every address and
  // returns the first, for the caller to pin its connection to. Refused if
  // any address is forbidden, so a name cannot hide an internal address
  // behind a public one. May block in the resolver.
  Result<IpAddress> vet(const Url& url) const;

  // Whether vet() asks the resolver for this URL's host: a name that is
  // neither an IP literal nor a loopback name. Never calls the resolver.
  bool resolves(const Url& url) const;

  // For the admin API at write time: checks what needs no DNS — the scheme,
  // IP literals in any spelling and the loopback names. Other host names
  // pass; vet() checks them at delivery time. Never calls the resolver.
  Result<void> vetLiteral(const Url& url) const;

  // The category that forbids `address` under this guard's allow-list, or
  // nullopt if it may be reached.
  std::optional<std::string_view> forbiddenCategory(const IpAddress& address) const;

 private:
  Resolver& resolver_;
  const std::vector<Cidr> allowNetworks_;
};

}  // namespace webhooker
