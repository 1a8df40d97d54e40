// parseHttpUrl: absolute http(s) URLs only; anything odd is refused.
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "base/url.h"

using webhooker::parseHttpUrl;

TEST_CASE("parseHttpUrl takes an https URL apart with its default port") {
  const auto url = parseHttpUrl("https://Example.COM/hooks/in");
  REQUIRE(url.has_value());
  CHECK(url->scheme == "https");
  CHECK(url->host == "example.com");
  CHECK(url->port == 443);
  CHECK(url->target == "/hooks/in");
  CHECK(url->userinfo.empty());
  CHECK_FALSE(url->ipv6Literal);
}

TEST_CASE("parseHttpUrl gives http port 80 and an empty path the target /") {
  const auto url = parseHttpUrl("http://example.com");
  REQUIRE(url.has_value());
  CHECK(url->scheme == "http");
  CHECK(url->host == "example.com");
  CHECK(url->port == 80);
  CHECK(url->target == "/");
}

TEST_CASE("parseHttpUrl lowercases the scheme") {
  const auto url = parseHttpUrl("HTTPS://example.com/");
  REQUIRE(url.has_value());
  CHECK(url->scheme == "https");
  CHECK(url->port == 443);
}

TEST_CASE("parseHttpUrl keeps an explicit port") {
  const auto a = parseHttpUrl("http://localhost:8080/x");
  REQUIRE(a.has_value());
  CHECK(a->host == "localhost");
  CHECK(a->port == 8080);
  CHECK(a->target == "/x");
  const auto b = parseHttpUrl("https://example.com:80/");
  REQUIRE(b.has_value());
  CHECK(b->port == 80);
  const auto lowest = parseHttpUrl("http://h:1/");
  REQUIRE(lowest.has_value());
  CHECK(lowest->port == 1);
  const auto highest = parseHttpUrl("http://h:65535/");
  REQUIRE(highest.has_value());
  CHECK(highest->port == 65535);
}

TEST_CASE("parseHttpUrl takes an IPv6 literal without its brackets") {
  const auto url = parseHttpUrl("http://[::1]:8080/path?a=1");
  REQUIRE(url.has_value());
  CHECK(url->host == "::1");
  CHECK(url->ipv6Literal);
  CHECK(url->port == 8080);
  CHECK(url->target == "/path?a=1");
  const auto noPort = parseHttpUrl("https://[2001:DB8::1]/");
  REQUIRE(noPort.has_value());
  CHECK(noPort->host == "2001:db8::1");
  CHECK(noPort->port == 443);
  CHECK(noPort->ipv6Literal);
}

TEST_CASE("parseHttpUrl keeps the query in the target and drops the fragment") {
  const auto url = parseHttpUrl("https://example.com/a/b?x=1&y=two#section");
  REQUIRE(url.has_value());
  CHECK(url->target == "/a/b?x=1&y=two");
  const auto queryOnly = parseHttpUrl("https://example.com?token=abc");
  REQUIRE(queryOnly.has_value());
  CHECK(queryOnly->host == "example.com");
  CHECK(queryOnly->target == "/?token=abc");
  const auto fragmentOnly = parseHttpUrl("https://example.com#frag");
  REQUIRE(fragmentOnly.has_value());
  CHECK(fragmentOnly->host == "example.com");
  CHECK(fragmentOnly->target == "/");
}

TEST_CASE("parseHttpUrl separates user:pass@ into userinfo") {
  const auto url = parseHttpUrl("https://user:pass@example.com/x");
  REQUIRE(url.has_value());
  CHECK(url->userinfo == "user:pass");
  CHECK(url->host == "example.com");
  CHECK(url->target == "/x");
}

TEST_CASE("parseHttpUrl refuses other schemes and a missing ://") {
  CHECK_FALSE(parseHttpUrl("ftp://example.com/file").has_value());
  CHECK_FALSE(parseHttpUrl("file:///etc/passwd").has_value());
  CHECK_FALSE(parseHttpUrl("ws://example.com/").has_value());
  CHECK_FALSE(parseHttpUrl("httpx://example.com/").has_value());
  CHECK_FALSE(parseHttpUrl("://example.com/").has_value());
  CHECK_FALSE(parseHttpUrl("http:example.com").has_value());
  CHECK_FALSE(parseHttpUrl("http:/example.com").has_value());
  CHECK_FALSE(parseHttpUrl("example.com/hook").has_value());
  CHECK_FALSE(parseHttpUrl("/relative/path").has_value());
  CHECK_FALSE(parseHttpUrl("").has_value());
}

TEST_CASE("parseHttpUrl refuses a URL without a host") {
  CHECK_FALSE(parseHttpUrl("http://").has_value());
  CHECK_FALSE(parseHttpUrl("http:///path").has_value());
  CHECK_FALSE(parseHttpUrl("http://:8080/").has_value());
  CHECK_FALSE(parseHttpUrl("http://user@/").has_value());
  CHECK_FALSE(parseHttpUrl("http://[]:80/").has_value());
  CHECK_FALSE(parseHttpUrl("http://?q=1").has_value());
}

TEST_CASE("parseHttpUrl refuses a bad port") {
  CHECK_FALSE(parseHttpUrl("http://example.com:0/").has_value());
  CHECK_FALSE(parseHttpUrl("http://example.com:65536/").has_value());
  CHECK_FALSE(parseHttpUrl("http://example.com:abc/").has_value());
  CHECK_FALSE(parseHttpUrl("http://example.com:-1/").has_value());
  CHECK_FALSE(parseHttpUrl("http://example.com:80a/").has_value());
  CHECK_FALSE(parseHttpUrl("http://example.com:99999999999/").has_value());
  CHECK_FALSE(parseHttpUrl("http://[::1]:0/").has_value());
  CHECK_FALSE(parseHttpUrl("http://[::1]x/").has_value());
  CHECK_FALSE(parseHttpUrl("http://[::1/").has_value());
}

TEST_CASE("parseHttpUrl refuses spaces and control characters anywhere") {
  CHECK_FALSE(parseHttpUrl("http://exa mple.com/").has_value());
  CHECK_FALSE(parseHttpUrl("http://example.com/a b").has_value());
  CHECK_FALSE(parseHttpUrl(" http://example.com/").has_value());
  CHECK_FALSE(parseHttpUrl("http://example.com/\r\nHost: evil").has_value());
  CHECK_FALSE(parseHttpUrl("http://example.com/\t").has_value());
  CHECK_FALSE(parseHttpUrl("http://example.com/\x7f").has_value());
  CHECK_FALSE(parseHttpUrl(std::string("http://example.com\0.evil/", 25)).has_value());
}

TEST_CASE("parseHttpUrl refuses characters a host cannot have") {
  CHECK_FALSE(parseHttpUrl("http://exa<mple.com/").has_value());
  CHECK_FALSE(parseHttpUrl("http://ex%41mple.com/").has_value());
}
