// SsrfGuard: every hostile spelling of an internal destination is refused,
// public destinations pass with the address to pin, and the allow-list opens
// only what it names. DNS is faked (StaticResolver) except for one look-up
// of "localhost" through the real SystemResolver.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/url.h"
#include "net/ssrf_guard.h"
#include "tests/support/hostile_destinations.h"
#include "tests/support/static_resolver.h"

using webhooker::Cidr;
using webhooker::IpAddress;
using webhooker::SsrfGuard;
using webhooker::SystemResolver;
using webhooker::Url;
using webhooker::testing::StaticResolver;
using webhooker::testing::Hostile;
using webhooker::testing::kHostile;
using webhooker::testing::addHostileNames;

namespace {

Url url(std::string_view text) {
  const auto parsed = webhooker::parseHttpUrl(text);
  REQUIRE_MESSAGE(parsed.has_value(), "the URL parser refused ", text);
  return *parsed;
}

std::vector<Cidr> allow(std::string_view list) {
  const auto networks = Cidr::parseList(list);
  REQUIRE(networks.ok());
  return *networks;
}

// "ok" or the error, so a wrong outcome fails a CHECK rather than Result's assert.
template <typename T>
std::string outcome(const webhooker::Result<T>& r) {
  return r.ok() ? "ok" : r.error().code;
}
template <typename T>
std::string message(const webhooker::Result<T>& r) {
  return r.ok() ? "ok" : r.error().message;
}
std::string pinned(const webhooker::Result<IpAddress>& r) {
  return r.ok() ? r->toString() : "refused: " + r.error().code;
}

}  // namespace

TEST_CASE("the hostile table is large enough to mean something") {
  CHECK(std::size(kHostile) >= 40);
}

TEST_CASE("vet refuses every hostile destination with blocked_destination") {
  StaticResolver dns;
  addHostileNames(dns);
  const SsrfGuard guard(dns, {});
  for (const Hostile& h : kHostile) {
    CAPTURE(h.url);
    const auto result = guard.vet(url(h.url));
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == "blocked_destination");
  }
}

TEST_CASE("vetLiteral refuses literals and loopback names without DNS, and lets other names through") {
  StaticResolver dns;
  addHostileNames(dns);
  const SsrfGuard guard(dns, {});
  for (const Hostile& h : kHostile) {
    CAPTURE(h.url);
    const auto result = guard.vetLiteral(url(h.url));
    if (h.needsDns) {
      CHECK(result.ok());
    } else {
      REQUIRE_FALSE(result.ok());
      CHECK(result.error().code == "blocked_destination");
    }
  }
  CHECK(guard.vetLiteral(url("https://hooks.example.com/in")).ok());
  CHECK(guard.vetLiteral(url("http://93.184.216.34/")).ok());
  CHECK(guard.vetLiteral(url("http://[2606:2800:220:1::1]/")).ok());
  CHECK(dns.lookups() == 0);
}

TEST_CASE("a literal is parsed, never resolved") {
  StaticResolver dns;
  dns.set("2130706433", {"93.184.216.34"});  // a resolver that would lie about it
  dns.set("127.0.0.1", {"93.184.216.34"});
  const SsrfGuard guard(dns, {});
  CHECK(outcome(guard.vet(url("http://2130706433/"))) == "blocked_destination");
  CHECK(outcome(guard.vet(url("http://127.0.0.1/"))) == "blocked_destination");
  CHECK(guard.vet(url("http://8.8.8.8/")).ok());
  CHECK(dns.lookups() == 0);
}

TEST_CASE("loopback names are answered locally, whatever the resolver claims") {
  StaticResolver dns;
  for (const char* name : {"localhost", "app.localhost", "localhost.localdomain", "ip6-localhost"})
    dns.set(name, {"93.184.216.34"});
  const SsrfGuard guard(dns, {});
  for (const char* u : {"http://localhost/", "http://app.localhost/", "http://a.b.localhost./",
                        "http://localhost.localdomain/", "http://ip6-localhost/",
                        "http://ip6-loopback/"}) {
    CAPTURE(u);
    const auto result = guard.vet(url(u));
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == "blocked_destination");
    CHECK(result.error().message.find("loopback") != std::string::npos);
  }
  CHECK(dns.lookups() == 0);
  // Only whole labels count: these are ordinary names.
  dns.set("notlocalhost", {"93.184.216.34"});
  dns.set("localhost.example", {"93.184.216.34"});
  CHECK(guard.vet(url("http://notlocalhost/")).ok());
  CHECK(guard.vet(url("http://localhost.example/")).ok());
}

TEST_CASE("public destinations pass and vet returns the address to pin") {
  StaticResolver dns;
  dns.set("public.example", {"93.184.216.34", "2606:2800:220:1::1"});
  dns.set("v6first.example", {"2606:2800:220:1::1", "93.184.216.34"});
  const SsrfGuard guard(dns, {});
  struct Case {
    std::string_view url;
    std::string_view pinned;
  };
  const Case cases[] = {
      {"http://93.184.216.34/", "93.184.216.34"},
      {"http://[2606:2800:220:1::1]/", "2606:2800:220:1::1"},
      {"http://8.8.8.8/", "8.8.8.8"},
      {"http://0x08080808/", "8.8.8.8"},  // odd spellings of public addresses are fine
      {"http://134744072/", "8.8.8.8"},
      {"http://8.8.8.8./", "8.8.8.8"},
      {"http://[::ffff:8.8.8.8]/", "::ffff:8.8.8.8"},
      {"http://[2002:808:808::1]/", "2002:808:808::1"},  // 6to4 of a public address
      {"http://172.32.0.1/", "172.32.0.1"},              // just past 172.16/12
      {"http://172.15.255.255/", "172.15.255.255"},      // just before it
      {"http://192.169.0.1/", "192.169.0.1"},
      {"http://100.128.0.1/", "100.128.0.1"},            // just past CGNAT
      {"http://100.63.255.255/", "100.63.255.255"},
      {"http://11.0.0.1/", "11.0.0.1"},
      {"http://126.255.255.255/", "126.255.255.255"},
      {"http://128.0.0.1/", "128.0.0.1"},
      {"http://169.253.255.255/", "169.253.255.255"},
      {"http://198.20.0.1/", "198.20.0.1"},
      {"http://223.255.255.255/", "223.255.255.255"},
      {"https://public.example/hook", "93.184.216.34"},  // the first address
      {"https://v6first.example/hook", "2606:2800:220:1::1"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.url);
    const auto result = guard.vet(url(c.url));
    REQUIRE(result.ok());
    CHECK(result->toString() == c.pinned);
    CHECK(guard.vetLiteral(url(c.url)).ok());
  }
}

TEST_CASE("each vet checks the answer it gets, so a rebinding name is caught when it switches") {
  StaticResolver dns;
  dns.set("rebind.example", {"93.184.216.34"});
  const SsrfGuard guard(dns, {});
  const auto first = guard.vet(url("http://rebind.example/"));
  REQUIRE(first.ok());
  CHECK(first->toString() == "93.184.216.34");  // the caller pins this; no second look-up
  dns.set("rebind.example", {"127.0.0.1"});
  const auto second = guard.vet(url("http://rebind.example/"));
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().code == "blocked_destination");
}

TEST_CASE("the refusal names the host, the category and the flag that opens it, not the internal address") {
  StaticResolver dns;
  addHostileNames(dns);
  const SsrfGuard guard(dns, {});
  const std::string howToAllow =
      "; to deliver there, start the daemon with --allow-networks CIDR (WEBHOOKER_ALLOW_NETWORKS)";
  const auto evil = guard.vet(url("http://evil.example/"));
  REQUIRE_FALSE(evil.ok());
  CHECK(evil.error().message == "evil.example resolves to a forbidden address (private)" + howToAllow);
  CHECK(evil.error().message.find("10.0.0.5") == std::string::npos);
  const auto metadata = guard.vet(url("http://169.254.169.254/latest/meta-data/"));
  REQUIRE_FALSE(metadata.ok());
  CHECK(metadata.error().message == "169.254.169.254 is a forbidden address (link-local)" + howToAllow);
  CHECK(message(guard.vet(url("http://[::1]/"))) == "[::1] is a forbidden address (loopback)" + howToAllow);
  CHECK(message(guard.vetLiteral(url("http://localhost/"))) ==
        "localhost resolves to a forbidden address (loopback)" + howToAllow);
}

TEST_CASE("the allow-list opens only the ranges it names") {
  StaticResolver dns;
  addHostileNames(dns);
  {
    const SsrfGuard guard(dns, allow("127.0.0.0/8"));
    CHECK(pinned(guard.vet(url("http://127.0.0.1:8080/"))) == "127.0.0.1");
    CHECK(pinned(guard.vet(url("http://127.1/"))) == "127.0.0.1");
    CHECK(guard.vet(url("http://[::ffff:127.0.0.1]/")).ok());  // the same IPv4 address
    CHECK(guard.vetLiteral(url("http://127.0.0.1/")).ok());
    CHECK(outcome(guard.vet(url("http://10.0.0.1/"))) == "blocked_destination");
    CHECK(outcome(guard.vet(url("http://169.254.169.254/"))) == "blocked_destination");
    CHECK(outcome(guard.vet(url("http://[::1]/"))) == "blocked_destination");
    // localhost is 127.0.0.1 and ::1; ::1 is not open.
    CHECK(outcome(guard.vet(url("http://localhost/"))) == "blocked_destination");
    CHECK(guard.vet(url("http://mixed.example/")).ok());  // 93.184.216.34 and 127.0.0.1
  }
  {
    const SsrfGuard guard(dns, allow("127.0.0.0/8, ::1/128"));
    CHECK(pinned(guard.vet(url("http://localhost:8080/"))) == "127.0.0.1");
    CHECK(guard.vetLiteral(url("http://localhost:8080/")).ok());
    CHECK(guard.vet(url("http://[::1]/")).ok());
    CHECK(outcome(guard.vet(url("http://[::2]/"))) == "blocked_destination");
  }
  {
    const SsrfGuard guard(dns, allow("10.0.0.0/8"));
    CHECK(pinned(guard.vet(url("http://evil.example/"))) == "10.0.0.5");
    CHECK(guard.vet(url("http://10.0.0.1/")).ok());
    CHECK(guard.vet(url("http://11.0.0.1/")).ok());  // public anyway
    CHECK(outcome(guard.vet(url("http://192.168.0.1/"))) == "blocked_destination");
    CHECK(outcome(guard.vet(url("http://mapped.example/"))) == "blocked_destination");
  }
}

TEST_CASE("Cidr::parseList reads a comma-separated list and names a bad entry") {
  const auto list = Cidr::parseList("10.0.0.0/8,127.0.0.1/32, ::1/128 ,\tfc00::/7");
  REQUIRE(list.ok());
  REQUIRE(list->size() == 4);
  CHECK((*list)[0].toString() == "10.0.0.0/8");
  CHECK((*list)[1].toString() == "127.0.0.1/32");
  CHECK((*list)[2].toString() == "::1/128");
  CHECK((*list)[3].toString() == "fc00::/7");
  CHECK(allow("").empty());
  CHECK(allow(" , ,").empty());
  REQUIRE(allow("127.0.0.1").size() == 1);
  CHECK(allow("127.0.0.1")[0].toString() == "127.0.0.1/32");

  for (const char* bad : {"banana", "10.0.0.0/33", "10.0.0.1/8", "10.0.0.0/8;127.0.0.0/8", "::1/129",
                          "fe80::%lo/10"}) {
    CAPTURE(bad);
    const std::string text = std::string("127.0.0.0/8, ") + bad;
    const auto result = Cidr::parseList(text);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == "invalid_config");
    CHECK(result.error().message.find(std::string("'") + bad + "'") != std::string::npos);
  }
}

TEST_CASE("a DNS failure is dns_failure, not blocked_destination") {
  StaticResolver dns;
  dns.set("empty.example", {});
  const SsrfGuard guard(dns, {});
  const auto unknown = guard.vet(url("http://unknown.example/"));
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == "dns_failure");
  const auto empty = guard.vet(url("http://empty.example/"));
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().code == "dns_failure");
}

TEST_CASE("hosts the URL parser would never produce are refused too") {
  StaticResolver dns;
  dns.set("a..b", {"93.184.216.34"});
  const SsrfGuard guard(dns, {});
  const auto refused = [&](Url u) {
    const auto result = guard.vet(u);
    return !result.ok() && result.error().code == "blocked_destination" && !guard.vetLiteral(u).ok();
  };
  Url u = url("http://93.184.216.34/");
  u.scheme = "ftp";
  CHECK(refused(u));
  u = url("http://93.184.216.34/");
  u.host = "";
  CHECK(refused(u));
  u.host = "a..b";
  CHECK(refused(u));
  u.host = ".";
  CHECK(refused(u));
  u.host = "Local.Host.LOCALHOST";  // not lowercased by hand: still loopback
  CHECK(refused(u));
  u.host = "::1";  // IPv6 without the literal flag
  CHECK(refused(u));
  u.host = "fe80::1%eth0";
  u.ipv6Literal = true;
  CHECK(refused(u));
  CHECK(dns.lookups() == 0);
}

TEST_CASE("every deny-list row is refused, also in IPv6 forms embedding it, and allowing it opens it") {
  StaticResolver dns;
  const SsrfGuard guard(dns, {});
  const auto& denied = webhooker::deniedNetworks();
  CHECK(denied.size() == 25);
  for (const auto& row : denied) {
    CAPTURE(row.network.toString());
    // The last address of the range as well as the first.
    auto last = row.network.net.bytes();
    const int bits = row.network.net.isV4() ? 32 : 128;
    for (int bit = row.network.prefix; bit < bits; ++bit)
      last[static_cast<size_t>(bit / 8)] |= static_cast<std::uint8_t>(0x80 >> (bit % 8));
    const IpAddress lastAddress = row.network.net.isV4()
                                      ? IpAddress::fromV4Bytes({last[0], last[1], last[2], last[3]})
                                      : IpAddress::fromV6Bytes(last);
    for (const IpAddress& a : {row.network.net, lastAddress}) {
      CAPTURE(a.toString());
      // The last address may fall in a narrower row listed first (240/4 ends
      // in the broadcast address), so only the first must be this category.
      const bool first = a == row.network.net;
      const auto category = guard.forbiddenCategory(a);
      REQUIRE(category.has_value());
      if (first) CHECK(*category == row.category);
      if (a.isV4()) {
        for (const std::string& form :
             {"::ffff:" + a.toString(), "::ffff:0:" + a.toString(), "64:ff9b::" + a.toString()}) {
          CAPTURE(form);
          CHECK(guard.forbiddenCategory(IpAddress::parse(form).value()) == category);
        }
      }
      const SsrfGuard opened(dns, {row.network});
      CHECK_FALSE(opened.forbiddenCategory(a).has_value());
    }
  }
}

TEST_CASE("vet may be called from many threads at once") {
  StaticResolver dns;
  addHostileNames(dns);
  dns.set("public.example", {"93.184.216.34"});
  const SsrfGuard guard(dns, {});
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      const Url good = *webhooker::parseHttpUrl("http://public.example/");
      const Url bad = *webhooker::parseHttpUrl("http://mixed.example/");
      for (int i = 0; i < 500; ++i) {
        if (!guard.vet(good).ok()) ++wrong;
        if (guard.vet(bad).ok()) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
}

TEST_CASE("SystemResolver resolves localhost to a loopback address, without duplicates") {
  SystemResolver resolver;
  const auto result = resolver.resolve("localhost");
  REQUIRE(result.ok());
  REQUIRE_FALSE(result->empty());
  const auto isLoopback = [](const IpAddress& a) {
    return a == IpAddress::fromV4(0x7f000001) || a == IpAddress::parse("::1").value() ||
           Cidr::parse("127.0.0.0/8")->contains(a);
  };
  CHECK(std::all_of(result->begin(), result->end(), isLoopback));
  for (size_t i = 0; i < result->size(); ++i)
    CHECK(std::count(result->begin(), result->end(), (*result)[i]) == 1);
  // A numeric host comes back as itself.
  const auto numeric = resolver.resolve("93.184.216.34");
  REQUIRE(numeric.ok());
  CHECK(numeric->size() == 1);
  CHECK(numeric->front().toString() == "93.184.216.34");
}
