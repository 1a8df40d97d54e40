// The remote address an event records: X-Forwarded-For counts only from a
// trusted proxy, and then only its right-most hop that is not itself a
// trusted proxy.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "server/client_address.h"

namespace webhooker::testing {
namespace {

IpAddress ip(const char* text) { return IpAddress::parse(text).value(); }

std::string clientOf(const char* peer, std::vector<std::string> forwardedFor,
                     const char* trusted = "10.0.0.0/8, fd00::/8") {
  const auto networks = Cidr::parseList(trusted).value();
  return server::clientAddress(ip(peer), forwardedFor, networks);
}

}  // namespace

TEST_CASE("from an untrusted peer the header is ignored") {
  CHECK(clientOf("203.0.113.7", {"198.51.100.1"}) == "203.0.113.7");
  CHECK(clientOf("203.0.113.7", {"198.51.100.1"}, "") == "203.0.113.7");
  CHECK(clientOf("203.0.113.7", {}) == "203.0.113.7");
  // A trusted-looking hop sent by an untrusted peer changes nothing.
  CHECK(clientOf("203.0.113.7", {"10.0.0.1"}) == "203.0.113.7");
}

TEST_CASE("from a trusted proxy the right-most untrusted hop is the client") {
  CHECK(clientOf("10.0.0.5", {"198.51.100.1"}) == "198.51.100.1");
  // Hops left of the first untrusted one were written by the client.
  CHECK(clientOf("10.0.0.5", {"1.2.3.4, 198.51.100.1"}) == "198.51.100.1");
  // Trusted hops (a chain of our own proxies) are skipped.
  CHECK(clientOf("10.0.0.5", {"198.51.100.1, 10.1.1.1 , 10.2.2.2"}) == "198.51.100.1");
  // Several header lines are one list, in order.
  CHECK(clientOf("10.0.0.5", {"1.2.3.4", "198.51.100.1, 10.9.9.9"}) == "198.51.100.1");
  CHECK(clientOf("fd00::1", {"2001:db8::7"}) == "2001:db8::7");
}

TEST_CASE("a header that names no address leaves the last hop that did") {
  CHECK(clientOf("10.0.0.5", {}) == "10.0.0.5");
  CHECK(clientOf("10.0.0.5", {""}) == "10.0.0.5");
  CHECK(clientOf("10.0.0.5", {"unknown"}) == "10.0.0.5");
  CHECK(clientOf("10.0.0.5", {"198.51.100.1, <script>, 10.1.1.1"}) == "10.1.1.1");
  CHECK(clientOf("10.0.0.5", {"198.51.100.1:4711"}) == "10.0.0.5");
  // Only trusted hops: the left-most is as far as we can see.
  CHECK(clientOf("10.0.0.5", {"10.1.1.1, 10.2.2.2"}) == "10.1.1.1");
}

}  // namespace webhooker::testing
