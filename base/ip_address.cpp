#include "base/ip_address.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

#include "base/hex_digit.h"

namespace webhooker {

namespace {

constexpr std::uint64_t kMaxV4 = 0xffffffff;

bool isDigitIn(char c, int base) {
  if (base == 16) return hexDigitValue(c) >= 0;
  if (base == 8) return c >= '0' && c <= '7';
  return c >= '0' && c <= '9';
}

// One part of an inet_aton address, read the way strtoul(base 0) does: "0x"
// + hex digits, "0" + octal digits, or decimal. Consumes what it reads; the
// caller checks what follows (so "08" and "0x" fail there, as in inet_aton).
bool readV4Part(std::string_view& s, std::uint64_t& value) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return false;
  int base = 10;
  if (s.front() == '0') {
    base = 8;
    if (s.size() > 2 && (s[1] == 'x' || s[1] == 'X') && isDigitIn(s[2], 16)) {
      base = 16;
      s.remove_prefix(2);
    }
  }
  value = 0;
  while (!s.empty() && isDigitIn(s.front(), base)) {
    value = value * static_cast<std::uint64_t>(base) +
            static_cast<std::uint64_t>(hexDigitValue(s.front()));
    if (value > kMaxV4) return false;  // inet_aton refuses anything past 32 bits
    s.remove_prefix(1);
  }
  return true;
}

// inet_aton's grammar: a.b.c.d, a.b.c (c is 16 bits), a.b (b is 24 bits), a (32 bits).
std::optional<IpAddress> parseV4(std::string_view s) {
  constexpr std::uint64_t kMaxLast[4] = {0xffffffff, 0xffffff, 0xffff, 0xff};
  std::uint32_t leading = 0;
  for (int parts = 0;; ++parts) {
    std::uint64_t value = 0;
    if (!readV4Part(s, value)) return std::nullopt;
    if (s.empty()) {
      if (value > kMaxLast[parts]) return std::nullopt;
      return IpAddress::fromV4(leading | static_cast<std::uint32_t>(value));
    }
    if (s.front() != '.' || parts == 3 || value > 0xff) return std::nullopt;
    leading |= static_cast<std::uint32_t>(value) << (24 - 8 * parts);
    s.remove_prefix(1);
  }
}

std::optional<IpAddress> parseV6(std::string_view s) {
  // Zone ids are refused (see the header); inet_pton would refuse them too,
  // but say so explicitly rather than rely on it.
  if (s.find('%') != std::string_view::npos || s.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  const std::string text(s);  // inet_pton wants a terminated string
  std::array<std::uint8_t, 16> bytes{};
  if (inet_pton(AF_INET6, text.c_str(), bytes.data()) != 1) return std::nullopt;
  return IpAddress::fromV6Bytes(bytes);
}

// a.b.c.d, each part decimal, 0..255, without a leading zero.
std::optional<IpAddress> parseDottedQuad(std::string_view s) {
  std::array<std::uint8_t, 4> bytes{};
  for (size_t part = 0; part < bytes.size(); ++part) {
    if (part > 0) {
      if (s.empty() || s.front() != '.') return std::nullopt;
      s.remove_prefix(1);
    }
    size_t digits = 0;
    unsigned value = 0;
    while (digits < s.size() && digits < 4 && s[digits] >= '0' && s[digits] <= '9')
      value = value * 10 + static_cast<unsigned>(s[digits++] - '0');
    if (digits == 0 || digits > 3 || value > 255 || (digits > 1 && s.front() == '0'))
      return std::nullopt;
    bytes[part] = static_cast<std::uint8_t>(value);
    s.remove_prefix(digits);
  }
  if (!s.empty()) return std::nullopt;
  return IpAddress::fromV4Bytes(bytes);
}

bool allZero(const std::array<std::uint8_t, 16>& b, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i)
    if (b[i] != 0) return false;
  return true;
}

IpAddress v4At(const std::array<std::uint8_t, 16>& b, size_t at) {
  return IpAddress::fromV4Bytes({b[at], b[at + 1], b[at + 2], b[at + 3]});
}

}  // namespace

IpAddress IpAddress::fromV4(std::uint32_t hostOrder) {
  return fromV4Bytes({static_cast<std::uint8_t>(hostOrder >> 24),
                      static_cast<std::uint8_t>(hostOrder >> 16),
                      static_cast<std::uint8_t>(hostOrder >> 8), static_cast<std::uint8_t>(hostOrder)});
}

IpAddress IpAddress::fromV4Bytes(const std::array<std::uint8_t, 4>& networkOrder) {
  IpAddress a;
  std::memcpy(a.bytes_.data(), networkOrder.data(), networkOrder.size());
  a.family_ = Family::kV4;
  return a;
}

IpAddress IpAddress::fromV6Bytes(const std::array<std::uint8_t, 16>& networkOrder) {
  IpAddress a;
  a.bytes_ = networkOrder;
  a.family_ = Family::kV6;
  return a;
}

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  if (text.find(':') != std::string_view::npos) return parseV6(text);
  return parseV4(text);
}

std::optional<IpAddress> IpAddress::parseStandard(std::string_view text) {
  if (text.find(':') != std::string_view::npos) return parseV6(text);
  return parseDottedQuad(text);
}

std::uint32_t IpAddress::v4Value() const {
  return static_cast<std::uint32_t>(bytes_[0]) << 24 | static_cast<std::uint32_t>(bytes_[1]) << 16 |
         static_cast<std::uint32_t>(bytes_[2]) << 8 | static_cast<std::uint32_t>(bytes_[3]);
}

std::optional<IpAddress> IpAddress::embeddedIpv4() const {
  if (isV4()) return std::nullopt;
  const auto& b = bytes_;
  // ::ffff:a.b.c.d (mapped)
  if (allZero(b, 0, 10) && b[10] == 0xff && b[11] == 0xff) return v4At(b, 12);
  // ::a.b.c.d (compatible), but :: and ::1 are addresses in their own right
  if (allZero(b, 0, 12) && !(allZero(b, 12, 15) && b[15] <= 1)) return v4At(b, 12);
  // ::ffff:0:a.b.c.d (translated)
  if (allZero(b, 0, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0) return v4At(b, 12);
  // 64:ff9b::a.b.c.d (NAT64 well-known prefix)
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && allZero(b, 4, 12))
    return v4At(b, 12);
  // 2002:aabb:ccdd::/48 (6to4)
  if (b[0] == 0x20 && b[1] == 0x02) return v4At(b, 2);
  return std::nullopt;
}

IpAddress IpAddress::unmapped() const {
  if (isV4() || !allZero(bytes_, 0, 10) || bytes_[10] != 0xff || bytes_[11] != 0xff) return *this;
  return v4At(bytes_, 12);
}

std::string IpAddress::toString() const {
  if (isV4()) {
    return std::to_string(bytes_[0]) + '.' + std::to_string(bytes_[1]) + '.' +
           std::to_string(bytes_[2]) + '.' + std::to_string(bytes_[3]);
  }
  char buf[INET6_ADDRSTRLEN] = {};
  // inet_ntop only fails for a short buffer or an unknown family.
  if (inet_ntop(AF_INET6, bytes_.data(), buf, sizeof buf) == nullptr) return "?";
  return buf;
}

std::optional<Cidr> Cidr::parse(std::string_view text) {
  const size_t slash = text.find('/');
  const auto address = IpAddress::parse(text.substr(0, slash));
  if (!address) return std::nullopt;
  const int maxPrefix = address->isV4() ? 32 : 128;
  int prefix = maxPrefix;
  if (slash != std::string_view::npos) {
    const std::string_view digits = text.substr(slash + 1);
    // from_chars would take a leading '-': insist on plain decimal digits.
    if (digits.empty() || digits.size() > 3) return std::nullopt;
    for (char c : digits)
      if (c < '0' || c > '9') return std::nullopt;
    std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
    if (prefix > maxPrefix) return std::nullopt;
  }
  Cidr cidr{*address, prefix};
  // Host bits past the prefix must be zero.
  const auto& b = address->bytes();
  for (int bit = prefix; bit < maxPrefix; ++bit)
    if (b[static_cast<size_t>(bit / 8)] & (0x80 >> (bit % 8))) return std::nullopt;
  return cidr;
}

Cidr Cidr::around(const IpAddress& address, int prefix) {
  std::array<std::uint8_t, 16> bytes = address.bytes();
  for (int bit = prefix; bit < 128; ++bit)
    bytes[static_cast<size_t>(bit / 8)] &= static_cast<std::uint8_t>(~(0x80 >> (bit % 8)));
  if (address.isV4()) return {IpAddress::fromV4Bytes({bytes[0], bytes[1], bytes[2], bytes[3]}), prefix};
  return {IpAddress::fromV6Bytes(bytes), prefix};
}

Cidr Cidr::unmapped() const {
  const IpAddress v4 = net.unmapped();
  if (v4.isV6() || prefix < 96) return *this;
  return {v4, prefix - 96};
}

bool Cidr::contains(const IpAddress& address) const {
  if (address.family() != net.family()) return false;
  const auto& a = address.bytes();
  const auto& n = net.bytes();
  const auto fullBytes = static_cast<size_t>(prefix / 8);
  if (std::memcmp(a.data(), n.data(), fullBytes) != 0) return false;
  const int restBits = prefix % 8;
  if (restBits == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - restBits));
  return (a[fullBytes] & mask) == (n[fullBytes] & mask);
}

std::string Cidr::toString() const { return net.toString() + '/' + std::to_string(prefix); }

Result<std::vector<Cidr>> Cidr::parseList(std::string_view commaSeparated) {
  std::vector<Cidr> networks;
  while (!commaSeparated.empty()) {
    const size_t comma = commaSeparated.find(',');
    std::string_view entry = commaSeparated.substr(0, comma);
    commaSeparated =
        comma == std::string_view::npos ? std::string_view{} : commaSeparated.substr(comma + 1);
    while (!entry.empty() && (entry.front() == ' ' || entry.front() == '\t')) entry.remove_prefix(1);
    while (!entry.empty() && (entry.back() == ' ' || entry.back() == '\t')) entry.remove_suffix(1);
    if (entry.empty()) continue;
    const auto cidr = Cidr::parse(entry);
    if (!cidr) {
      return makeError(error_code::kInvalidConfig, "'" + std::string(entry) +
                                             "' is not a network such as 10.0.0.0/8 or ::1/128");
    }
    networks.push_back(*cidr);
  }
  return networks;
}

}  // namespace webhooker
