#include "net/ssrf_guard.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/ascii_case.h"

namespace webhooker {

namespace {

struct DenyRow {
  std::string_view cidr;
  std::string_view category;
};

// The deny list. IPv6 forms carrying an IPv4 address are checked against the
// IPv4 rows as well (IpAddress::embeddedIpv4), so ::ffff:0:0/96, ::/96,
// 64:ff9b::/96 and 2002::/16 need no rows of their own. The first row that
// contains an address names its category, so a narrower row goes first.
constexpr DenyRow kDenyTable[] = {
    // IPv4
    {"0.0.0.0/8", "unspecified"},         // "this network"; Linux connects 0.0.0.0 to the local host
    {"10.0.0.0/8", "private"},            // RFC 1918
    {"100.64.0.0/10", "shared"},          // carrier-grade NAT (RFC 6598), the provider's own net
    {"127.0.0.0/8", "loopback"},          // our own host
    {"169.254.0.0/16", "link-local"},     // incl. 169.254.169.254, the cloud metadata service
    {"172.16.0.0/12", "private"},         // RFC 1918
    {"192.0.0.0/24", "reserved"},         // IETF protocol assignments (RFC 6890)
    {"192.0.2.0/24", "documentation"},    // TEST-NET-1 (RFC 5737)
    {"192.168.0.0/16", "private"},        // RFC 1918
    {"198.18.0.0/15", "benchmarking"},    // RFC 2544 test networks
    {"198.51.100.0/24", "documentation"}, // TEST-NET-2
    {"203.0.113.0/24", "documentation"},  // TEST-NET-3
    {"224.0.0.0/4", "multicast"},         // not a single receiver
    {"255.255.255.255/32", "broadcast"},  // limited broadcast; before 240/4, which holds it
    {"240.0.0.0/4", "reserved"},          // class E, never routed
    // IPv6
    {"::/128", "unspecified"},            // like 0.0.0.0, reaches the local host
    {"::1/128", "loopback"},              // our own host
    {"fc00::/7", "unique-local"},         // ULA (RFC 4193), incl. fd00:ec2::254 (AWS metadata)
    {"fe80::/10", "link-local"},          // the local link (RFC 4291)
    {"fec0::/10", "site-local"},          // deprecated (RFC 3879), still routed inside sites
    {"ff00::/8", "multicast"},            // not a single receiver
    {"2001:db8::/32", "documentation"},   // RFC 3849
    {"100::/64", "discard"},              // discard-only (RFC 6666)
    {"64:ff9b:1::/48", "private"},        // local-use NAT64 (RFC 8215): translates into the local network
    {"2001::/32", "tunnel"},              // Teredo: the IPv4 peer is obfuscated, so it cannot be checked
};

constexpr std::string_view kLoopbackNames[] = {"localhost", "localhost.localdomain", "ip6-localhost",
                                               "ip6-loopback"};

bool isHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// A name whose last label is a number is meant as an IPv4 address (the
// WHATWG URL rule); if it did not parse as one, it must not go to DNS.
bool endsInNumber(std::string_view name) {
  const size_t dot = name.rfind('.');
  std::string_view last = dot == std::string_view::npos ? name : name.substr(dot + 1);
  if (last.empty()) return false;
  if (last.size() >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X'))
    return std::all_of(last.begin() + 2, last.end(), isHexDigit);
  return std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// RFC 6761 §6.3: localhost names are loopback whatever a resolver says.
std::vector<IpAddress> loopbackAnswer(std::string_view name) {
  const IpAddress v4 = IpAddress::fromV4(0x7f000001);
  const IpAddress v6 = *IpAddress::parse("::1");
  if (name == "ip6-localhost" || name == "ip6-loopback") return {v6};
  const bool isLocalhost = std::find(std::begin(kLoopbackNames), std::end(kLoopbackNames), name) !=
                               std::end(kLoopbackNames) ||
                           name.ends_with(".localhost");
  if (isLocalhost) return {v4, v6};
  return {};
}

Error blocked(std::string message) {
  return makeError(error_code::kBlockedDestination, std::move(message));
}

// `is` "is" or "resolves to". An operator who means to deliver there (a
// receiver on the same host, a private network) opens the range; the
// message says how.
Error forbidden(const std::string& host, const char* is, std::string_view category) {
  return blocked(host + " " + is + " a forbidden address (" + std::string(category) +
                 "); to deliver there, start the daemon with --allow-networks CIDR "
                 "(WEBHOOKER_ALLOW_NETWORKS)");
}

// The host of a URL, classified before anything is resolved.
struct Host {
  std::string display;                // for messages: "[::1]", "evil.example"
  std::optional<IpAddress> literal;   // an IP literal in any spelling
  std::vector<IpAddress> loopback;    // the answer for a loopback name
};

Result<Host> classifyHost(const Url& url) {
  if (url.scheme != "http" && url.scheme != "https")
    return blocked("only http and https URLs may be delivered to");
  const std::string host = asciiLower(url.host);
  Host out;
  out.display = url.ipv6Literal ? "[" + host + "]" : host;
  if (host.empty()) return blocked("the URL has no host");

  if (url.ipv6Literal || host.find(':') != std::string::npos) {
    out.literal = IpAddress::parse(host);  // zone ids are refused by parse
    if (!out.literal || !out.literal->isV6())
      return blocked(out.display + " is not a valid IPv6 address");
    return out;
  }
  // One trailing dot is the root label ("example.com."); resolvers and
  // browsers ignore it, so "127.0.0.1." is 127.0.0.1.
  std::string_view name = host;
  if (name.ends_with('.')) name.remove_suffix(1);
  if (name.empty() || name.front() == '.' || name.back() == '.' ||
      name.find("..") != std::string_view::npos)
    return blocked(out.display + " is not a valid host name");
  out.literal = IpAddress::parse(name);
  if (out.literal) return out;
  if (endsInNumber(name)) return blocked(out.display + " is not a valid IP address");
  out.loopback = loopbackAnswer(name);
  return out;
}

}  // namespace

const std::vector<DeniedNetwork>& deniedNetworks() {
  static const std::vector<DeniedNetwork> networks = [] {
    std::vector<DeniedNetwork> out;
    for (const DenyRow& row : kDenyTable) {
      const auto cidr = Cidr::parse(row.cidr);
      // A bad row is a bug in this file, not bad input.
      if (!cidr) throw std::logic_error("bad deny-list row " + std::string(row.cidr));
      out.push_back({*cidr, row.category});
    }
    return out;
  }();
  return networks;
}

SsrfGuard::SsrfGuard(Resolver& resolver, std::vector<Cidr> allowNetworks)
    : resolver_(resolver), allowNetworks_(std::move(allowNetworks)) {}

std::optional<std::string_view> SsrfGuard::forbiddenCategory(const IpAddress& address) const {
  const auto allowed = [this](const IpAddress& a) {
    return std::any_of(allowNetworks_.begin(), allowNetworks_.end(),
                       [&](const Cidr& c) { return c.contains(a); });
  };
  const auto denied = [](const IpAddress& a) -> std::optional<std::string_view> {
    for (const DeniedNetwork& d : deniedNetworks())
      if (d.network.contains(a)) return d.category;
    return std::nullopt;
  };
  if (allowed(address)) return std::nullopt;
  if (auto category = denied(address)) return category;
  if (const auto v4 = address.embeddedIpv4()) {
    if (allowed(*v4)) return std::nullopt;
    return denied(*v4);
  }
  return std::nullopt;
}

Result<IpAddress> SsrfGuard::vet(const Url& url) const {
  auto host = classifyHost(url);
  if (!host) return host.error();
  if (host->literal) {
    if (const auto category = forbiddenCategory(*host->literal))
      return forbidden(host->display, "is", *category);
    return *host->literal;
  }
  std::vector<IpAddress> addresses = std::move(host->loopback);
  if (addresses.empty()) {
    auto resolved = resolver_.resolve(url.host);
    if (!resolved) return resolved.error();
    addresses = std::move(*resolved);
    if (addresses.empty())
      return makeError(error_code::kDnsFailure,
                       "cannot resolve " + host->display + ": no addresses");
  }
  // Every address, not just the one we will use: a caller's retry or a
  // library's fallback must never reach one we did not check.
  for (const IpAddress& address : addresses) {
    if (const auto category = forbiddenCategory(address))
      return forbidden(host->display, "resolves to", *category);
  }
  return addresses.front();
}

bool SsrfGuard::resolves(const Url& url) const {
  const auto host = classifyHost(url);
  return host && !host->literal && host->loopback.empty();
}

Result<void> SsrfGuard::vetLiteral(const Url& url) const {
  auto host = classifyHost(url);
  if (!host) return host.error();
  if (host->literal) {
    if (const auto category = forbiddenCategory(*host->literal))
      return forbidden(host->display, "is", *category);
    return {};
  }
  for (const IpAddress& address : host->loopback) {
    if (const auto category = forbiddenCategory(address))
      return forbidden(host->display, "resolves to", *category);
  }
  return {};
}

}  // namespace webhooker
