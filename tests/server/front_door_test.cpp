// The front door against real sockets: the real HttpServer on 127.0.0.1,
// real SQLite files, clients that misbehave on purpose — slow heads and
// bodies, requests without a length, a declared length over the limit,
// pipelined requests, more connections than the caps, forwarded addresses.
//
// Deadlines are set short here so the tests stay quick; every time bound
// asserted is many times the deadline, for a shared and slow machine. Each
// case fails on a thread-per-connection server with per-read timeouts.
#include <doctest/doctest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/client_address.h"
#include "tests/support/eventually.h"
#include "tests/support/prometheus_text.h"
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

// This process's resident set: the server under test runs in it.
size_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  size_t resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

// A hostile request: `head`, then `piece` again and again until `total`
// bytes of it are sent or the server answers, then `tail`. The answer, and
// how far the resident set grew over its start meanwhile.
struct Flooded {
  std::optional<RawAnswer> answer;
  size_t residentGrowth = 0;
};
Flooded flood(int port, const std::string& head, const std::string& piece, size_t total,
              const std::string& tail) {
  RawConnection c(port);
  const size_t before = residentBytes();
  Flooded out;
  const auto grew = [&] {
    const size_t now = residentBytes();
    out.residentGrowth = std::max(out.residentGrowth, now - std::min(before, now));
  };
  REQUIRE(c.send(head));
  for (size_t sent = 0; sent < total && !out.answer; sent += piece.size()) {
    if (!c.send(piece)) break;
    out.answer = c.read(1ms);
    grew();
  }
  if (!out.answer && c.send(tail)) out.answer = c.read(10s);
  if (!out.answer) out.answer = c.read(1s);
  grew();
  return out;
}

std::string repeated(std::string_view text, size_t bytes) {
  std::string out;
  while (out.size() < bytes) out += text;
  return out;
}

std::string metricsOf(const TestServer& server) {
  auto client = server.anonymousClient();
  const auto res = client.Get("/metrics");
  return res && res->status == 200 ? res->body : "";
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

TEST_CASE("after a refusal the connection drops at most 1 MiB of what still comes, then closes") {
  FrontDoor door;
  RawConnection c(door.server.port());
  REQUIRE(c.send("POST /hooks/" + door.entrypoint +
                 " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n"));
  const auto answer = c.read(5s);
  REQUIRE(answer);
  CHECK(answer->status == 400);
  CHECK(answer->closes());
  // The client goes on sending as fast as loopback takes it: the server
  // reads 1 MiB of it at most, then closes, and sending fails once the
  // sockets' buffers (a few MiB on loopback) are full.
  const std::string piece(64 << 10, 'x');
  size_t sent = 0;
  while (sent < (size_t{256} << 20) && c.send(piece)) sent += piece.size();
  CAPTURE(sent);
  CHECK(sent < (size_t{32} << 20));
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

TEST_CASE("chunk framing counts against the limits: a long chunk line or trailer is 400, "
          "and holds no memory") {
  FrontDoor door;
  const std::string chunked =
      "GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  constexpr size_t kTenMiB = 10 << 20;
  struct Case {
    std::string name;
    std::string head;
    std::string piece;
    std::string tail;
  };
  const Case cases[] = {
      {"a 10 MiB chunk extension", chunked + "1;ext=", std::string(64 << 10, 'a'),
       "\r\nx\r\n0\r\n\r\n"},
      {"a 10 MiB trailer line", chunked + "1\r\nx\r\n0\r\nX-Trailer: ", std::string(64 << 10, 'a'),
       "\r\n\r\n"},
      {"10 MiB of trailer fields", chunked + "1\r\nx\r\n0\r\n", repeated("a: b\r\n", 64 << 10),
       "\r\n"},
      {"10 MiB of leading zeros in a chunk size", chunked, std::string(64 << 10, '0'),
       "1\r\nx\r\n0\r\n\r\n"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const Flooded flooded = flood(door.server.port(), c.head, c.piece, kTenMiB, c.tail);
    REQUIRE(flooded.answer);
    CHECK(flooded.answer->status == 400);
    CHECK(codeOf(*flooded.answer) == "bad_request");
    CHECK(flooded.residentGrowth < size_t{4} << 20);
  }
}

TEST_CASE("chunk framing counts against the limits: trailer fields and framing bytes in all") {
  FrontDoor door;
  const std::string chunked =
      "GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  SUBCASE("trailer fields count with the head's: at most 256") {
    RawConnection c(door.server.port());
    REQUIRE(c.send(chunked + "1\r\nx\r\n0\r\n" + repeated("a: b\r\n", 300 * 6) + "\r\n"));
    const auto answer = c.read(5s);
    REQUIRE(answer);
    CHECK(answer->status == 431);
    CHECK(codeOf(*answer) == "headers_too_large");
  }
  SUBCASE("chunk lines of 8 KiB each, over 64 KiB of framing in all") {
    RawConnection c(door.server.port());
    const std::string chunk = "1;e=" + std::string(8000, 'a') + "\r\nx\r\n";
    REQUIRE(c.send(chunked + repeated(chunk, 10 * chunk.size()) + "0\r\n\r\n"));
    const auto answer = c.read(5s);
    REQUIRE(answer);
    CHECK(answer->status == 400);
    CHECK(codeOf(*answer) == "bad_request");
  }
  SUBCASE("a chunked body with a little framing is still read") {
    RawConnection c(door.server.port());
    REQUIRE(c.send("POST /hooks/" + door.entrypoint +
                   " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n3;note=first\r\n{\"n\r\n4\r\n\":1}\r\n"
                   "0\r\nX-Checksum: none\r\n\r\n"));
    const auto answer = c.read(5s);
    REQUIRE(answer);
    CHECK(answer->status == 200);
    CHECK(door.events() == 1);
  }
}

TEST_CASE("a request that stops sending is cut by the stall limit, well before its deadline") {
  FrontDoor door([](server::ServerOptions& o) {
    o.headerTimeout = 60s;
    o.bodyGrace = 60s;
    o.stallTimeout = 1s;
  });
  SUBCASE("a body sent up front, then silence") {
    RawConnection c(door.server.port());
    const std::string request = door.post(std::string(100'000, 'x'));
    REQUIRE(c.send(request.substr(0, request.size() - 1)));
    const auto answer = c.read(10s);  // the body's own deadline is over a minute away
    REQUIRE(answer);
    CHECK(answer->status == 408);
    CHECK(codeOf(*answer) == "request_timeout");
    CHECK(c.closedWithin(5s));
    CHECK(door.events() == 0);
  }
  SUBCASE("a head begun, then silence") {
    RawConnection c(door.server.port());
    REQUIRE(c.send("POST /hooks/" + door.entrypoint + " HTTP/1.1\r\nHo"));
    const auto answer = c.read(10s);
    REQUIRE(answer);
    CHECK(answer->status == 408);
    CHECK(codeOf(*answer) == "request_timeout");
  }
}

TEST_CASE("bytes held by unfinished requests are capped: new bodies 503, the most stalled closed") {
  FrontDoor door([](server::ServerOptions& o) {
    o.headerTimeout = 60s;
    o.bodyGrace = 60s;
    o.stallTimeout = 60s;
    o.maxBufferedBytes = 1 << 20;
  });
  const auto buffered = [&] {
    return valueIn(metricsOf(door.server), "webhooker_http_buffered_bytes", {});
  };
  // Stalled: 600 KiB declared (which it holds from its head on), half sent.
  RawConnection stalled(door.server.port());
  const std::string request = door.post(std::string(600 << 10, 'x'));
  REQUIRE(stalled.send(request.substr(0, request.size() - (300 << 10))));
  REQUIRE(eventually([&] { return buffered() >= 600 << 10; }));

  // A body that does not fit beside it is refused before it is sent.
  RawConnection refused(door.server.port());
  REQUIRE(refused.send("POST /hooks/" + door.entrypoint +
                       " HTTP/1.1\r\nHost: x\r\nContent-Length: 614400\r\n\r\n"));
  const auto busy = refused.read(5s);
  REQUIRE(busy);
  CHECK(busy->status == 503);
  CHECK(codeOf(*busy) == "server_busy");
  CHECK(busy->head.find("Retry-After: 1") != std::string::npos);
  CHECK(busy->closes());

  // A chunked body (no length declared) that grows past the cap: the
  // stalled request is closed to make room, and this one is served.
  RawConnection growing(door.server.port());
  REQUIRE(growing.send("GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk = "4000\r\n" + std::string(0x4000, 'y') + "\r\n";
  for (int i = 0; i < 40; ++i) REQUIRE(growing.send(chunk));
  REQUIRE(growing.send("0\r\n\r\n"));
  const auto served = growing.read(10s);
  REQUIRE(served);
  CHECK(served->status == 200);

  const auto cut = stalled.read(5s);
  REQUIRE(cut);
  CHECK(cut->status == 503);
  CHECK(codeOf(*cut) == "server_busy");
  CHECK(stalled.closedWithin(5s));
  CHECK(eventually([&] { return buffered() == 0; }));
  CHECK(door.events() == 0);
}

TEST_CASE("a body refused for room is answered only after the delay, unread, while others are served") {
  // A flood that reopens each refused connection at once is refused once
  // per connection per delay, not once per round trip.
  FrontDoor door([](server::ServerOptions& o) {
    o.headerTimeout = 60s;
    o.bodyGrace = 60s;
    o.stallTimeout = 60s;
    o.maxBufferedBytes = 1 << 20;
    o.busyRefusalDelay = 1s;
  });
  const auto gauge = [&](const char* name) { return valueIn(metricsOf(door.server), name, {}); };
  RawConnection stalled(door.server.port());
  const std::string request = door.post(std::string(600 << 10, 'x'));
  REQUIRE(stalled.send(request.substr(0, request.size() - (300 << 10))));
  REQUIRE(eventually([&] { return gauge("webhooker_http_buffered_bytes") >= 600 << 10; }));

  // Refused, with 64 KiB of its body already sent: held, holding no buffer.
  const auto sent = std::chrono::steady_clock::now();
  RawConnection refused(door.server.port());
  REQUIRE(refused.send("POST /hooks/" + door.entrypoint +
                       " HTTP/1.1\r\nHost: x\r\nContent-Length: 614400\r\n\r\n" +
                       std::string(64 << 10, 'z')));
  REQUIRE(eventually([&] { return gauge("webhooker_http_busy_refusals_waiting") == 1; }));
  CHECK(gauge("webhooker_http_buffered_bytes") < 700 << 10);
  // Meanwhile the server answers others: a GET on a connection of its own.
  RawConnection other(door.server.port());
  REQUIRE(other.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  const auto healthz = other.read(5s);
  REQUIRE(healthz);
  CHECK(healthz->status == 200);

  const auto busy = refused.read(10s);
  REQUIRE(busy);
  CHECK(std::chrono::steady_clock::now() - sent >= 1s);
  CHECK(busy->status == 503);
  CHECK(codeOf(*busy) == "server_busy");
  CHECK(busy->head.find("Retry-After: 1") != std::string::npos);
  CHECK(refused.closedWithin(5s));
  CHECK(eventually([&] { return gauge("webhooker_http_busy_refusals_waiting") == 0; }));
  CHECK(door.events() == 0);
}

TEST_CASE("a body that comes whole makes room by cutting a stalled one") {
  // Requests silent for a fifth of the stall limit (1 s here) give way.
  FrontDoor door([](server::ServerOptions& o) {
    o.headerTimeout = 60s;
    o.bodyGrace = 60s;
    o.stallTimeout = 5s;
    o.maxBufferedBytes = 1 << 20;
  });
  RawConnection stalled(door.server.port());
  const std::string request = door.post(std::string(600 << 10, 'x'));
  REQUIRE(stalled.send(request.substr(0, request.size() - (300 << 10))));
  REQUIRE(eventually([&] {
    return valueIn(metricsOf(door.server), "webhooker_http_buffered_bytes", {}) >= 600 << 10;
  }));
  // Refused while the stalled body is fresh; admitted once it is stalled.
  const std::string whole = "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 614400\r\n\r\n" +
                            std::string(600 << 10, 'y');
  std::vector<int> statuses;
  REQUIRE(eventually(
      [&] {
        RawConnection c(door.server.port());
        c.send(whole);
        const auto answer = c.read(5s);
        statuses.push_back(answer ? answer->status : 0);
        return statuses.back() == 200;
      },
      4s));
  // A refusal closes at once, unread bytes and all: its answer may be lost
  // to the reset (0), but it is never a success.
  for (size_t i = 0; i + 1 < statuses.size(); ++i)
    CHECK((statuses[i] == 503 || statuses[i] == 0));
  const auto cut = stalled.read(5s);
  REQUIRE(cut);
  CHECK(cut->status == 503);
  CHECK(codeOf(*cut) == "server_busy");
}

TEST_CASE("a small request makes room at once by cutting a bigger body, stalled or not") {
  // The stall limit is a minute: nothing here is stalled.
  FrontDoor door([](server::ServerOptions& o) {
    o.headerTimeout = 60s;
    o.bodyGrace = 60s;
    o.stallTimeout = 60s;
    o.maxBufferedBytes = 1 << 20;
  });
  const auto buffered = [&] {
    return valueIn(metricsOf(door.server), "webhooker_http_buffered_bytes", {});
  };
  // A big body, still coming: it holds ~1,000 KiB of the 1 MiB cap.
  RawConnection big(door.server.port());
  const std::string request = door.post(std::string((1 << 20) - (28 << 10), 'x'));
  REQUIRE(big.send(request.substr(0, request.size() - (300 << 10))));
  REQUIRE(eventually([&] { return buffered() >= 1000 << 10; }));

  // A body as big as it does not make it give way.
  RawConnection same(door.server.port());
  REQUIRE(same.send("POST /hooks/" + door.entrypoint + " HTTP/1.1\r\nHost: x\r\n"
                    "Content-Type: application/json\r\nContent-Length: " +
                    std::to_string((1 << 20) - (28 << 10)) + "\r\n\r\n"));
  const auto refused = same.read(5s);
  REQUIRE(refused);
  CHECK(refused->status == 503);
  CHECK(codeOf(*refused) == "server_busy");
  CHECK(buffered() >= 1000 << 10);

  // A small event does, at once: it is served, the big body cut.
  RawConnection small(door.server.port());
  REQUIRE(small.send(door.post(R"({"n":1})")));
  const auto served = small.read(5s);
  REQUIRE(served);
  CHECK(served->status == 200);
  CHECK(door.events() == 1);
  const auto cut = big.read(5s);
  REQUIRE(cut);
  CHECK(cut->status == 503);
  CHECK(codeOf(*cut) == "server_busy");
  CHECK(big.closedWithin(5s));
  CHECK(eventually([&] { return buffered() == 0; }));
}

TEST_CASE("framing that proxies may read differently is refused with 400") {
  FrontDoor door;
  const std::string hook = "POST /hooks/" + door.entrypoint + " HTTP/1.1\r\n";
  const std::string json = "Content-Type: application/json\r\n";
  struct Case {
    std::string name;
    std::string request;
  };
  const Case cases[] = {
      {"Transfer-Encoding through an obs-fold continuation",
       hook + "Host: x\r\n" + json + "Transfer-Encoding:\r\n chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"},
      {"a folded line hiding Transfer-Encoding in another header",
       hook + "Host: x\r\n" + json +
           "X-Note: a\r\n Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n{}"},
      {"two equal Content-Lengths",
       hook + "Host: x\r\n" + json + "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}"},
      {"a Content-Length list", hook + "Host: x\r\n" + json + "Content-Length: 2, 2\r\n\r\n{}"},
      {"HTTP/1.1 without Host", hook + json + "Content-Length: 2\r\n\r\n{}"},
      {"two Hosts", hook + "Host: x\r\nHost: y\r\n" + json + "Content-Length: 2\r\n\r\n{}"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    RawConnection connection(door.server.port());
    REQUIRE(connection.send(c.request));
    const auto answer = connection.read(5s);
    REQUIRE(answer);
    CHECK(answer->status == 400);
    CHECK(codeOf(*answer) == "bad_request");
    CHECK(answer->closes());
  }
  CHECK(door.events() == 0);
  // HTTP/1.0 needs no Host.
  RawConnection old(door.server.port());
  REQUIRE(old.send("POST /hooks/" + door.entrypoint + " HTTP/1.0\r\n" + json +
                   "Content-Length: 2\r\n\r\n{}"));
  const auto answer = old.read(5s);
  REQUIRE(answer);
  CHECK(answer->status == 200);
}

}  // namespace webhooker::testing
