// IpAddress and Cidr: every spelling of an address, checked against the C
// library's own parsers, and network membership at the edges.
#include <doctest/doctest.h>

#include <arpa/inet.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "base/ip_address.h"

using webhooker::Cidr;
using webhooker::IpAddress;

namespace {

std::string parsed(std::string_view text) {
  const auto a = IpAddress::parse(text);
  return a ? a->toString() : "(refused)";
}

// What glibc's inet_aton makes of `text`: the oracle for the IPv4 spellings.
std::string inetAton(const std::string& text) {
  in_addr addr{};
  if (inet_aton(text.c_str(), &addr) == 0) return "(refused)";
  char buf[INET_ADDRSTRLEN] = {};
  return inet_ntop(AF_INET, &addr, buf, sizeof buf);
}

}  // namespace

TEST_CASE("IpAddress parses the standard forms and prints them back") {
  CHECK(parsed("93.184.216.34") == "93.184.216.34");
  CHECK(parsed("0.0.0.0") == "0.0.0.0");
  CHECK(parsed("255.255.255.255") == "255.255.255.255");
  CHECK(parsed("::") == "::");
  CHECK(parsed("::1") == "::1");
  CHECK(parsed("2606:2800:220:1:248:1893:25c8:1946") == "2606:2800:220:1:248:1893:25c8:1946");
  CHECK(parsed("2001:DB8:0:0:0:0:0:1") == "2001:db8::1");
  CHECK(parsed("0:0:0:0:0:ffff:127.0.0.1") == "::ffff:127.0.0.1");
  CHECK(parsed("::ffff:7f00:1") == "::ffff:127.0.0.1");

  const auto v4 = IpAddress::parse("10.1.2.3");
  REQUIRE(v4);
  CHECK(v4->isV4());
  CHECK(v4->v4Value() == 0x0a010203u);
  CHECK(*v4 == IpAddress::fromV4(0x0a010203));
  CHECK(*v4 == IpAddress::fromV4Bytes({10, 1, 2, 3}));
  const auto v6 = IpAddress::parse("::1");
  REQUIRE(v6);
  CHECK(v6->isV6());
  CHECK(v6->bytes()[15] == 1);
  CHECK_FALSE(*IpAddress::parse("::") == IpAddress::fromV4(0));  // same bytes, other family
  CHECK(IpAddress{} == IpAddress::fromV4(0));
}

TEST_CASE("IpAddress parses the odd IPv4 spellings attackers use") {
  struct Case {
    std::string_view text;
    std::string_view address;
  };
  const Case cases[] = {
      {"2130706433", "127.0.0.1"},         // one 32-bit decimal
      {"0x7f000001", "127.0.0.1"},         // one 32-bit hex
      {"0X7F000001", "127.0.0.1"},         // upper case
      {"017700000001", "127.0.0.1"},       // one 32-bit octal
      {"0177.0.0.1", "127.0.0.1"},         // octal part
      {"0177.0.0.01", "127.0.0.1"},        // octal everywhere
      {"0x7f.0.0.1", "127.0.0.1"},         // hex part
      {"0x7f.0x0.0x0.0x1", "127.0.0.1"},   // hex everywhere
      {"0x7f.1", "127.0.0.1"},             // mixed short form: 8 + 24 bits
      {"127.1", "127.0.0.1"},              // a.b: b is 24 bits
      {"127.0.1", "127.0.0.1"},            // a.b.c: c is 16 bits
      {"10.1", "10.0.0.1"},
      {"1.2.3", "1.2.0.3"},
      {"0", "0.0.0.0"},
      {"00", "0.0.0.0"},
      {"0x0", "0.0.0.0"},
      {"169.254.43518", "169.254.169.254"},  // 43518 = 0xa9fe
      {"0xa9fea9fe", "169.254.169.254"},
      {"2852039166", "169.254.169.254"},
      {"0251.0376.0251.0376", "169.254.169.254"},
      {"000000000000000000000000177.1", "127.0.0.1"},  // leading zeros do not overflow
      {"4294967295", "255.255.255.255"},
      {"1.16777215", "1.255.255.255"},
      {"1.2.65535", "1.2.255.255"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    CHECK(parsed(c.text) == c.address);
  }
}

TEST_CASE("IpAddress refuses what is not exactly one address") {
  const std::string_view bad[] = {
      "", "256.0.0.1", "1.2.3.256", "1.2.3.4.5", "1..2", ".1", "1.", "1.2.3.4.",
      "4294967296", "0x100000000", "1.16777216", "1.2.65536", "256.1",
      "08", "0x", "0xg", "1e3", "-1", "+1", "a", "localhost", "1.2.3.4 ", " 1.2.3.4",
      "1.2.3.4x", "99999999999999999999999",
      ":", ":::", "1:2:3:4:5:6:7:8:9", "::g", "[::1]", "fe80::1%eth0", "fe80::1%1", "::1%",
      "::ffff:0x7f.1", "::ffff:127.1", "2001:db8::1/64", "1::2::3",
  };
  for (std::string_view text : bad) {
    CAPTURE(text);
    CHECK_FALSE(IpAddress::parse(text).has_value());
  }
}

TEST_CASE("IPv4 parsing agrees with inet_aton on every spelling") {
  // inet_aton is what getaddrinfo uses for numeric hosts, so any difference
  // is a spelling that reaches an address the guard would not see.
  const std::string spellings[] = {
      "127.0.0.1", "127.1", "127.0.1", "10.1", "1.2.3", "0", "00", "0x0", "0x", "0X", "0xg",
      "2130706433", "0x7f000001", "0X7f000001", "017700000001", "0177.0.0.1", "0x7f.1", "0x7f.0.0.1",
      "0x7F.0X0.1", "08", "09.1", "0.08", "07.07.07.07", "0377.0377.0377.0377", "0400.0.0.0",
      "256.0.0.1", "255.255.255.255", "1.2.3.4.5", "1..2", ".1", "1.", "1.2.3.", "",
      "4294967295", "4294967296", "0xffffffff", "0x100000000", "037777777777", "040000000000",
      "1.16777215", "1.16777216", "1.2.65535", "1.2.65536", "1.0xffffff", "1.0x1000000",
      "1.2.0xffff", "1.2.0x10000", "0x00000000007f.1", "000000000000000000000000177.1",
      "99999999999999999999999", "18446744073709551616", "1e3", "-1", "+1", "0x-1", "1.-1",
      "a", "0xa.0xb.0xc.0xd", "0xA.0xB", "1.2.3.0x4", "1.2.3.04", "1.2.3.08",
  };
  for (const std::string& s : spellings) {
    CAPTURE(s);
    CHECK(parsed(s) == inetAton(s));
  }
  // Where we are stricter on purpose: inet_aton stops at white space.
  CHECK(inetAton("127.0.0.1 evil") == "127.0.0.1");
  CHECK_FALSE(IpAddress::parse("127.0.0.1 evil").has_value());
}

TEST_CASE("IPv6 parsing agrees with inet_pton") {
  const std::string spellings[] = {
      "::", "::1", "1::", "fe80::1", "FE80::1", "::ffff:127.0.0.1", "::127.0.0.1",
      "64:ff9b::127.0.0.1", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:1.2.3.4", "::ffff:1.2.3",
      "::ffff:01.2.3.4", "1:2:3:4:5:6:7:8:9", "12345::", ":1::", "1:::2", "::ffff:256.1.1.1",
  };
  for (const std::string& s : spellings) {
    CAPTURE(s);
    std::array<unsigned char, 16> bytes{};
    const bool ok = inet_pton(AF_INET6, s.c_str(), bytes.data()) == 1;
    const auto a = IpAddress::parse(s);
    REQUIRE(a.has_value() == ok);
    if (ok) CHECK(a->bytes() == bytes);
  }
}

TEST_CASE("embeddedIpv4 finds the IPv4 address in mapped, compatible, translated, NAT64 and 6to4 forms") {
  struct Case {
    std::string_view text;
    std::string_view embedded;  // "" for none
  };
  const Case cases[] = {
      {"::ffff:127.0.0.1", "127.0.0.1"},     // mapped
      {"::ffff:7f00:1", "127.0.0.1"},
      {"0:0:0:0:0:ffff:169.254.169.254", "169.254.169.254"},
      {"::127.0.0.1", "127.0.0.1"},          // compatible
      {"::7f00:1", "127.0.0.1"},
      {"::2", "0.0.0.2"},
      {"::ffff:0:10.0.0.1", "10.0.0.1"},     // translated
      {"64:ff9b::127.0.0.1", "127.0.0.1"},   // NAT64
      {"64:ff9b::a00:1", "10.0.0.1"},
      {"2002:7f00:1::1", "127.0.0.1"},       // 6to4
      {"2002:c0a8:101::", "192.168.1.1"},
      {"::", ""},                            // unspecified, not 0.0.0.0 in disguise
      {"::1", ""},                           // loopback, not 0.0.0.1
      {"2001:db8::7f00:1", ""},
      {"64:ff9b:1::7f00:1", ""},             // local-use NAT64: its own deny row
      {"fe80::ffff:7f00:1", ""},
      {"1::ffff:127.0.0.1", ""},
      {"127.0.0.1", ""},                     // already IPv4
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const auto a = IpAddress::parse(c.text);
    REQUIRE(a);
    const auto e = a->embeddedIpv4();
    CHECK((e ? e->toString() : "") == c.embedded);
    if (e) CHECK(e->isV4());
  }
}

TEST_CASE("Cidr parses networks and refuses bad prefixes and host bits") {
  const auto net = Cidr::parse("10.0.0.0/8");
  REQUIRE(net);
  CHECK(net->net.toString() == "10.0.0.0");
  CHECK(net->prefix == 8);
  CHECK(net->toString() == "10.0.0.0/8");
  CHECK(Cidr::parse("fc00::/7").value().toString() == "fc00::/7");
  CHECK(Cidr::parse("0.0.0.0/0").value().prefix == 0);
  CHECK(Cidr::parse("::/0").value().prefix == 0);
  CHECK(Cidr::parse("1.2.3.4").value().toString() == "1.2.3.4/32");  // a bare address is one host
  CHECK(Cidr::parse("::1").value().toString() == "::1/128");
  CHECK(Cidr::parse("1.2.3.4/32").value().prefix == 32);
  CHECK(Cidr::parse("::1/128").value().prefix == 128);
  CHECK(Cidr::parse("0x0a000000/8").value().toString() == "10.0.0.0/8");  // any spelling of the address

  const std::string_view bad[] = {
      "10.0.0.1/8", "10.0.0.0/33", "::/129", "10.0.0.0/", "/8", "10.0.0.0/-1", "10.0.0.0/+8",
      "10.0.0.0/8x", "10.0.0.0/ 8", "10.0.0.0 /8", "10.0.0.0/8/8", "10/8", "fe80::%eth0/10",
      "fe80::1/10", "banana", "", "10.0.0.0/0008", "::1/127",
  };
  for (std::string_view text : bad) {
    CAPTURE(text);
    CHECK_FALSE(Cidr::parse(text).has_value());
  }
}

TEST_CASE("Cidr contains exactly its range, of its own family") {
  const auto ip = [](std::string_view s) { return IpAddress::parse(s).value(); };
  const Cidr rfc1918 = Cidr::parse("172.16.0.0/12").value();
  CHECK(rfc1918.contains(ip("172.16.0.0")));
  CHECK(rfc1918.contains(ip("172.31.255.255")));
  CHECK_FALSE(rfc1918.contains(ip("172.32.0.0")));
  CHECK_FALSE(rfc1918.contains(ip("172.15.255.255")));

  const Cidr cgnat = Cidr::parse("100.64.0.0/10").value();
  CHECK(cgnat.contains(ip("100.127.255.255")));
  CHECK_FALSE(cgnat.contains(ip("100.128.0.0")));
  CHECK_FALSE(cgnat.contains(ip("100.63.255.255")));

  const Cidr host = Cidr::parse("127.0.0.1/32").value();
  CHECK(host.contains(ip("127.0.0.1")));
  CHECK_FALSE(host.contains(ip("127.0.0.2")));

  const Cidr ula = Cidr::parse("fc00::/7").value();
  CHECK(ula.contains(ip("fc00::")));
  CHECK(ula.contains(ip("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")));
  CHECK_FALSE(ula.contains(ip("fe00::")));
  CHECK_FALSE(ula.contains(ip("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")));

  const Cidr linkLocal = Cidr::parse("fe80::/10").value();
  CHECK(linkLocal.contains(ip("febf:ffff::1")));
  CHECK_FALSE(linkLocal.contains(ip("fec0::1")));

  const Cidr all4 = Cidr::parse("0.0.0.0/0").value();
  const Cidr all6 = Cidr::parse("::/0").value();
  CHECK(all4.contains(ip("255.255.255.255")));
  CHECK_FALSE(all4.contains(ip("::ffff:1.2.3.4")));  // families never mix here
  CHECK(all6.contains(ip("::ffff:1.2.3.4")));
  CHECK_FALSE(all6.contains(ip("1.2.3.4")));
  CHECK_FALSE(Cidr::parse("::/96").value().contains(ip("0.0.0.1")));
}
