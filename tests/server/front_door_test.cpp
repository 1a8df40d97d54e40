// The front door against real sockets: the real HttpServer on 127.0.0.1,
// real SQLite files, clients that misbehave on purpose — slow heads and
// bodies, requests without a length, a declared length over the limit,
// pipelined requests, more connections than the caps, forwarded addresses.
//
// Deadlines are set short here so the tests stay quick; every time bound
// asserted is many times the deadline, for a shared and slow machine. Each
// case fails on a thread-per-connection server with per-read timeouts.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/client_address.h"
#include "tests/support/raw_connection.h"
#include "tests/support/test_server.h"

namespace webhooker::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// A webhook with one entrypoint and one target, on a server with short
// deadlines.
struct FrontDoor {
  explicit FrontDoor(std::function<void(server::ServerOptions&)> tune = nullptr)
      : server(TestServerOptions{.tune = [tune](server::ServerOptions& o) {
          o.headerTimeout = 1s;
          o.bodyGrace = 1s;
          o.idleTimeout = 1s;
          if (tune) tune(o);
        }}) {
    const json webhook = server.createWebhook("shop");
    webhookId = webhook["id"];
    entrypoint = webhook["entrypoints"][0]["id"];
    server.createTarget(webhookId, {{"name", "db"}, {"type", "database"}});
  }

  std::string post(const std::string& body, const std::string& extraHeaders = "") const {
    return "POST /hooks/" + entrypoint + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
           extraHeaders + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  }
  int64_t events() const { return countRows(server.eventsDbPath(webhookId), "events"); }

  TestServer server;
  std::string webhookId;
  std::string entrypoint;
};

std::string codeOf(const RawAnswer& answer) {
  const json body = json::parse(answer.body, nullptr, false);
  if (!body.is_object() || !body.contains("error")) return "<not an error: " + answer.body + ">";
  return body["error"]["code"];
}

}  // namespace

TEST_CASE("64 slow clients do not stall ingest, the API or /healthz, and are cut off") {
  FrontDoor door;
  // Half send a head one byte at a time and stop; half connect and send nothing.
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 64; ++i) {
    slow.push_back(std::make_unique<RawConnection>(door.server.port()));
    if (i % 2 == 0) REQUIRE(slow.back()->send("POST /hooks/" + door.entrypoint + " HTTP/1.1\r\nHo"));
  }
  // Meanwhile everybody else is served (a thread per connection: 8 threads
  // held, nothing answered for as long as the slow ones keep going).
  auto sender = door.server.anonymousClient();
  sender.set_read_timeout(5s);
  for (int i = 0; i < 20; ++i) {
    CHECK(statusOf(sender.Post("/hooks/" + door.entrypoint, R"({"n":1})", "application/json")) == 200);
    CHECK(statusOf(sender.Get("/healthz")) == 200);
  }
  auto admin = door.server.client();
  admin.set_read_timeout(5s);
  CHECK(statusOf(admin.Get("/api/v1/webhooks")) == 200);
  CHECK(door.events() == 20);

  // The head deadline (1 s here) closes every one of them: a 408 for a head
  // begun, nothing for a connection that never sent a byte.
  for (size_t i = 0; i < slow.size(); ++i) {
    CAPTURE(i);
    if (i % 2 == 0) {
      const auto answer = slow[i]->read(20s);
      REQUIRE(answer);
      CHECK(answer->status == 408);
      CHECK(codeOf(*answer) == "request_timeout");
    }
    CHECK(slow[i]->closedWithin(20s));
  }
  CHECK(door.events() == 20);
}

TEST_CASE("a body slower than the minimum rate is answered 408 and stores nothing") {
  FrontDoor door;
  RawConnection slow(door.server.port());
  const std::string body(50'000, 'x');
  const std::string request = door.post(body);
  REQUIRE(slow.send(request.substr(0, request.size() - body.size() + 10)));
  // 10 bytes a second is far below 1 KB/s: cut off after the grace (1 s).
  std::optional<RawAnswer> answer;
  for (int i = 0; i < 200 && !answer; ++i) {
    slow.send("xxxxxxxxxx");
    answer = slow.read(100ms);
  }
  REQUIRE(answer);
  CHECK(answer->status == 408);
  CHECK(codeOf(*answer) == "request_timeout");
  CHECK(answer->head.find("X-Content-Type-Options: nosniff") != std::string::npos);
  CHECK(door.events() == 0);
  CHECK(door.server.dispatcher().batchCount() == 0);
}

TEST_CASE("an idle keep-alive connection is closed after the idle deadline") {
  FrontDoor door;
  RawConnection c(door.server.port());
  REQUIRE(c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  const auto answer = c.read();
  REQUIRE(answer);
  CHECK(answer->status == 200);
  CHECK_FALSE(answer->closes());
  CHECK(c.closedWithin(20s));  // idle deadline 1 s
}

TEST_CASE("framing: a POST without a length has no body (RFC 9112 6.3)") {
  FrontDoor door;
  SUBCASE("ingest: 411, the connection closed, a pipelined request not read as a body") {
    RawConnection c(door.server.port());
    REQUIRE(c.send("POST /hooks/" + door.entrypoint +
                   " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\r\n"
                   "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    const auto answer = c.read();
    REQUIRE(answer);
    CHECK(answer->status == 411);
    CHECK(codeOf(*answer) == "length_required");
    CHECK(answer->closes());
    CHECK_FALSE(c.read(2s));  // the pipelined GET gets no answer: closed
    CHECK(door.events() == 0);
    CHECK(door.server.dispatcher().batchCount() == 0);
  }
  SUBCASE("admin: answered at once, and the next request is a request") {
    auto sender = door.server.anonymousClient();
    sender.Post("/hooks/" + door.entrypoint, "{}", "application/json");
    const std::string delivery = door.server.dispatcher().tasks().at(0).deliveryId;
    RawConnection c(door.server.port());
    // As `curl -X POST .../retry` sends it: no Content-Length at all.
    REQUIRE(c.send("POST /api/v1/webhooks/" + door.webhookId + "/deliveries/" + delivery +
                   "/retry HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + door.server.token() +
                   "\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    const auto retry = c.read(5s);  // a per-read timeout server waits for a body (30 s)
    REQUIRE(retry);
    CHECK(retry->status != 400);
    CHECK(retry->status < 500);
    const auto health = c.read(5s);
    REQUIRE(health);
    CHECK(health->status == 200);
    CHECK(health->body.find("ok") != std::string::npos);
  }
}

TEST_CASE("a declared length over the limit is refused at once, without the body") {
  FrontDoor door;
  RawConnection c(door.server.port());
  REQUIRE(c.send("POST /hooks/" + door.entrypoint +
                 " HTTP/1.1\r\nHost: x\r\nContent-Length: 10737418240\r\n\r\nabc"));
  const auto answer = c.read(5s);  // not after a read timeout
  REQUIRE(answer);
  CHECK(answer->status == 413);
  CHECK(codeOf(*answer) == "body_too_large");
  CHECK(answer->closes());
  CHECK(door.events() == 0);
}

TEST_CASE("Expect: 100-continue gets its interim answer before the body is sent") {
  FrontDoor door;
  RawConnection c(door.server.port());
  const std::string body = R"({"n":1})";
  REQUIRE(c.send("POST /hooks/" + door.entrypoint +
                 " HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: " +
                 std::to_string(body.size()) + "\r\n\r\n"));
  const auto interim = c.read(5s);  // curl waits a second for it, then sends anyway
  REQUIRE(interim);
  CHECK(interim->status == 100);
  REQUIRE(c.send(body));
  const auto answer = c.read();
  REQUIRE(answer);
  CHECK(answer->status == 200);
  CHECK(door.events() == 1);
}

TEST_CASE("pipelined requests are answered in order, each as itself") {
  FrontDoor door;
  RawConnection c(door.server.port());
  // A replay with no length has no body: the GET after it is a request.
  REQUIRE(c.send(door.post(R"({"n":1})") + "POST /api/v1/webhooks/" + door.webhookId +
                 "/replay HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + door.server.token() +
                 "\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + door.post(R"({"n":2})") +
                 "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"));
  const auto first = c.read();
  const auto replay = c.read();
  REQUIRE(replay);
  CHECK(replay->status == 200);
  CHECK(json::parse(replay->body)["count"] == 0);
  const auto health = c.read();
  const auto second = c.read();
  const auto missing = c.read();
  REQUIRE(first);
  REQUIRE(health);
  REQUIRE(second);
  REQUIRE(missing);
  CHECK(first->status == 200);
  CHECK(health->status == 200);
  CHECK(json::parse(health->body)["status"] == "ok");
  CHECK(second->status == 200);
  CHECK(json::parse(first->body)["event_id"] != json::parse(second->body)["event_id"]);
  CHECK(missing->status == 404);
  CHECK(door.events() == 2);
  for (const auto& body : {R"({"n":1})", R"({"n":2})"}) {
    SQLite::Database db = openReadOnly(door.server.eventsDbPath(door.webhookId));
    SQLite::Statement q(db, "SELECT count(*) FROM events WHERE CAST(body AS TEXT) = ?");
    q.bind(1, body);
    REQUIRE(q.executeStep());
    CHECK(q.getColumn(0).getInt() == 1);
  }
}

TEST_CASE("connections over the per-address cap are refused at once with 503") {
  FrontDoor door([](server::ServerOptions& o) { o.maxConnectionsPerAddress = 8; });
  // Each held connection is open on the server's side once it answers 200.
  // The set-up's own connections may not be released yet: a 503 here is
  // one of them still counted, so that place is tried again.
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int tries = 0; held.size() < 8 && tries < 200; ++tries) {
    auto c = std::make_unique<RawConnection>(door.server.port());
    c->send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    if (const auto answer = c->read(5s); answer && answer->status == 200)
      held.push_back(std::move(c));
    else
      std::this_thread::sleep_for(50ms);
  }
  REQUIRE(held.size() == 8);
  RawConnection extra(door.server.port());
  const auto refused = extra.read(5s);
  REQUIRE(refused);
  CHECK(refused->status == 503);
  CHECK(codeOf(*refused) == "too_many_connections");
  CHECK(extra.closedWithin(5s));

  held.pop_back();
  // The place is given back once the server sees the close.
  std::optional<RawAnswer> answer;
  for (int i = 0; i < 100 && !(answer && answer->status == 200); ++i) {
    RawConnection again(door.server.port());
    again.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    answer = again.read(5s);
    if (!(answer && answer->status == 200)) std::this_thread::sleep_for(50ms);
  }
  REQUIRE(answer);
  CHECK(answer->status == 200);
}

TEST_CASE("X-Forwarded-For counts from a trusted proxy only") {
  const auto remoteOf = [](FrontDoor& door, const std::string& forwardedFor) {
    RawConnection c(door.server.port());
    REQUIRE(c.send(door.post("{}", "X-Forwarded-For: " + forwardedFor + "\r\n")));
    const auto answer = c.read();
    REQUIRE(answer);
    REQUIRE(answer->status == 200);
    const std::string id = json::parse(answer->body)["event_id"];
    SQLite::Database db = openReadOnly(door.server.eventsDbPath(door.webhookId));
    SQLite::Statement q(db, "SELECT remote_addr FROM events WHERE id = ?");
    q.bind(1, id);
    REQUIRE(q.executeStep());
    return q.getColumn(0).getString();
  };
  SUBCASE("loopback is a trusted proxy: the right-most untrusted hop") {
    FrontDoor door([](server::ServerOptions& o) {
      o.trustedProxies = Cidr::parseList("127.0.0.0/8, 10.0.0.0/8").value();
    });
    CHECK(remoteOf(door, "198.51.100.7") == "198.51.100.7");
    CHECK(remoteOf(door, "6.6.6.6, 198.51.100.7, 10.1.2.3") == "198.51.100.7");
    CHECK(remoteOf(door, "not-an-address") == "127.0.0.1");
  }
  SUBCASE("no trusted proxies: the header is ignored") {
    FrontDoor door;
    CHECK(remoteOf(door, "198.51.100.7") == "127.0.0.1");
  }
  SUBCASE("a trusted proxy written as an IPv4-mapped IPv6 address is the IPv4 peer") {
    FrontDoor door([](server::ServerOptions& o) {
      o.trustedProxies = Cidr::parseList("::ffff:127.0.0.1, ::ffff:127.0.0.0/104").value();
    });
    CHECK(remoteOf(door, "198.51.100.7") == "198.51.100.7");
  }
  SUBCASE("a hop with leading zeros is no address, not an octal one") {
    FrontDoor door([](server::ServerOptions& o) {
      o.trustedProxies = Cidr::parseList("127.0.0.0/8").value();
    });
    CHECK(remoteOf(door, "010.1.1.1") == "127.0.0.1");
    CHECK(remoteOf(door, "198.51.100.7, 0x7f.1") == "127.0.0.1");
    CHECK(remoteOf(door, "2001:db8::7") == "2001:db8::7");
  }
}

TEST_CASE("the per-address connection cap counts an IPv6 peer by its /64") {
  const auto key = [](std::string_view address) {
    return server::connectionCapKey(IpAddress::parse(address).value());
  };
  CHECK(key("2001:db8:1:2::1") == key("2001:db8:1:2:ffff:ffff:ffff:ffff"));
  CHECK(key("2001:db8:1:2::1") != key("2001:db8:1:3::1"));
  CHECK(key("198.51.100.7") != key("198.51.100.8"));
}

}  // namespace webhooker::testing
