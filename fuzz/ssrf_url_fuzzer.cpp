// URLs and hosts as a target config names them: base/url, base/ip_address
// and the SSRF guard. The resolver answers every name with a public address,
// so only the guard's own reading of the host decides. Properties:
//  - a parsed URL formats and parses back to the same parts;
//  - an address or network formats and parses back to itself, and an IPv4 /
//    IPv6 literal reads as the C library reads it (inet_aton, inet_pton);
//  - a host the C library takes as a numeric address that is internal is
//    refused, in whatever spelling; nothing vet() lets through is internal;
//  - what the API refuses at write time (vetLiteral) is refused at delivery.
#include <arpa/inet.h>
#include <netdb.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string>

#include "base/ip_address.h"
#include "base/url.h"
#include "fuzz/fuzz_check.h"
#include "net/ssrf_guard.h"

namespace {

using webhooker::IpAddress;

class PublicResolver final : public webhooker::Resolver {
 public:
  webhooker::Result<std::vector<IpAddress>> resolve(const std::string&) override {
    return std::vector<IpAddress>{IpAddress::fromV4(0x5db8d822)};  // 93.184.216.34
  }
};

std::string format(const webhooker::Url& url) {
  return url.scheme + "://" + (url.userinfo.empty() ? "" : url.userinfo + "@") +
         (url.ipv6Literal ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port) +
         url.target;
}

// Internal by a check written apart from the guard's table: the ranges an
// attacker aims at, in raw bytes, with IPv4-mapped IPv6 read as IPv4.
bool obviouslyInternal(const IpAddress& address) {
  const auto& b = address.bytes();
  if (address.isV6()) {
    static constexpr std::array<std::uint8_t, 12> kMapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(b.data(), kMapped.data(), kMapped.size()) == 0)
      return obviouslyInternal(IpAddress::fromV4Bytes({b[12], b[13], b[14], b[15]}));
    const bool zeroPrefix = std::all_of(b.begin(), b.begin() + 15, [](auto x) { return x == 0; });
    return (zeroPrefix && b[15] <= 1) || (b[0] & 0xfe) == 0xfc || (b[0] == 0xfe && (b[1] & 0xc0) == 0x80);
  }
  return b[0] == 0 || b[0] == 10 || b[0] == 127 || (b[0] == 169 && b[1] == 254) ||
         (b[0] == 172 && (b[1] & 0xf0) == 16) || (b[0] == 192 && b[1] == 168) ||
         (b[0] == 100 && (b[1] & 0xc0) == 64) || b[0] >= 224;
}

// What getaddrinfo makes of a numeric host, as a connect() would use it.
std::optional<IpAddress> numericHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return std::nullopt;
  std::optional<IpAddress> out;
  if (result->ai_family == AF_INET) {
    std::array<std::uint8_t, 4> bytes{};
    std::memcpy(bytes.data(), &reinterpret_cast<sockaddr_in*>(result->ai_addr)->sin_addr, 4);
    out = IpAddress::fromV4Bytes(bytes);
  } else if (result->ai_family == AF_INET6) {
    std::array<std::uint8_t, 16> bytes{};
    std::memcpy(bytes.data(), &reinterpret_cast<sockaddr_in6*>(result->ai_addr)->sin6_addr, 16);
    out = IpAddress::fromV6Bytes(bytes);
  }
  freeaddrinfo(result);
  return out;
}

void checkAddress(const std::string& text) {
  const auto address = IpAddress::parse(text);
  if (address) FUZZ_CHECK(IpAddress::parse(address->toString()) == address);
  // The C library's reading, where it reads the whole string.
  const bool plain = text.find_first_of(std::string(" \t\n\v\f\r\0", 7)) == std::string::npos;
  if (plain && text.find(':') == std::string::npos) {
    in_addr v4{};
    if (inet_aton(text.c_str(), &v4) != 0) {
      std::array<std::uint8_t, 4> bytes{};
      std::memcpy(bytes.data(), &v4, 4);
      FUZZ_CHECK(address == IpAddress::fromV4Bytes(bytes));
    } else {
      FUZZ_CHECK(!address);
    }
  } else if (plain) {
    std::array<std::uint8_t, 16> v6{};
    const bool libc = inet_pton(AF_INET6, text.c_str(), v6.data()) == 1;
    FUZZ_CHECK(libc == address.has_value());
    if (libc) FUZZ_CHECK(*address == IpAddress::fromV6Bytes(v6));
  }
  const auto cidr = webhooker::Cidr::parse(text);
  if (cidr) {
    FUZZ_CHECK(webhooker::Cidr::parse(cidr->toString()) == cidr);
    FUZZ_CHECK(cidr->contains(cidr->net));
  }
}

void checkUrl(const std::string& text) {
  static PublicResolver resolver;
  static const webhooker::SsrfGuard guard(resolver, {});
  const auto url = webhooker::parseHttpUrl(text);
  if (!url) return;
  const auto again = webhooker::parseHttpUrl(format(*url));
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(format(*again) == format(*url) && again->ipv6Literal == url->ipv6Literal);

  const auto vetted = guard.vet(*url);
  if (vetted) FUZZ_CHECK(!obviouslyInternal(*vetted));
  if (const auto numeric = numericHost(url->host); numeric && obviouslyInternal(*numeric))
    FUZZ_CHECK(!vetted);
  if (!guard.vetLiteral(*url)) FUZZ_CHECK(!vetted);
  checkAddress(url->host);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  checkUrl(text);
  // The same text as a host in a URL, and as an address on its own.
  if (text.find_first_of("/?#@[]") == std::string::npos) checkUrl("http://" + text + "/hook");
  checkAddress(text);
  return 0;
}
