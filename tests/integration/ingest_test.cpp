// POST /hooks/<entrypoint-uuid> end to end (DESIGN §4): the real HttpServer
// on loopback, real SQLite files. What was stored is checked by reading
// events-<webhook>.db read-only with SQLiteCpp; every refused request is
// also checked to have written nothing and handed nothing to the dispatcher.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/uuid.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_clock.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/raw_connection.h"
#include "tests/support/test_server.h"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using webhooker::Task;
using webhooker::testing::countRows;
using webhooker::testing::dumpDatabase;
using webhooker::testing::errorCode;
using webhooker::testing::eventually;
using webhooker::testing::FakeClock;
using webhooker::testing::jsonOf;
using webhooker::testing::openReadOnly;
using webhooker::testing::patchJson;
using webhooker::testing::RawConnection;
using webhooker::testing::statusOf;
using webhooker::testing::TestServer;
using webhooker::testing::TestServerOptions;

// NUL bytes, 0xFF, a lone continuation byte: anything that treats the body
// as a C string or as UTF-8 text loses or changes bytes.
// Split literal: "\x00ab" would be one hex escape (0xab), making the
// literal shorter than 11 bytes (an overflow ASan found).
const std::string kBinaryBody("\x00\x01\xff\xfe\x00" "ab\x80\x00\xff\xff", 11);

TestServerOptions withBodyLimit(size_t limit) {
  TestServerOptions o;
  o.bodyLimit = limit;
  return o;
}

TestServerOptions withClock(const webhooker::Clock& clock) {
  TestServerOptions o;
  o.clock = &clock;
  return o;
}

// A webhook with four targets: two active (http, log) that get deliveries,
// one inactive (database) and one deleted (slack) that get none.
struct Hook {
  TestServer server;
  std::string webhookId;
  std::string entrypointId;
  std::map<std::string, std::string> activeTargets;  // id → type
  std::string inactiveTargetId;
  std::string deletedTargetId;

  explicit Hook(TestServerOptions options = {}) : server(options) {
    const json webhook = server.createWebhook("shop");
    webhookId = webhook["id"].get<std::string>();
    entrypointId = webhook["entrypoints"][0]["id"].get<std::string>();
    const json http = server.createTarget(
        webhookId, {{"name", "orders"},
                    {"type", "http"},
                    {"config", {{"url", "https://example.com/hook"}}}});
    activeTargets[http["id"].get<std::string>()] = "http";
    const json log = server.createTarget(webhookId, {{"name", "audit"}, {"type", "log"}});
    activeTargets[log["id"].get<std::string>()] = "log";
    const json off =
        server.createTarget(webhookId, {{"name", "off"}, {"type", "database"}, {"active", false}});
    inactiveTargetId = off["id"].get<std::string>();
    const json gone = server.createTarget(
        webhookId, {{"name", "gone"},
                    {"type", "slack"},
                    {"config", {{"webhook_url", "https://hooks.slack.com/x"}}}});
    deletedTargetId = gone["id"].get<std::string>();
    auto admin = server.client();
    auto del = admin.Delete("/api/v1/webhooks/" + webhookId + "/targets/" + deletedTargetId);
    if (statusOf(del) != 204) FAIL("deleting the target failed: " << statusOf(del));
  }

  std::string hookPath() const { return "/hooks/" + entrypointId; }
  std::filesystem::path eventsDb() const { return server.eventsDbPath(webhookId); }

  httplib::Result post(const std::string& body, const std::string& contentType = "application/json",
                       const httplib::Headers& headers = {}, const std::string& path = "") {
    auto c = server.anonymousClient();
    return c.Post(path.empty() ? hookPath() : path, headers, body, contentType);
  }

  int64_t events() const { return countRows(eventsDb(), "events"); }
  int64_t deliveries() const { return countRows(eventsDb(), "deliveries"); }
  // webhooker_events_received_total on /metrics; -1 when absent.
  double eventsReceived() const {
    auto res = server.anonymousClient().Get("/metrics");
    return res ? webhooker::testing::valueIn(res->body, "webhooker_events_received_total", {})
               : -1;
  }

  // Everything a request could have written or handed over.
  std::string state() {
    return dumpDatabase(eventsDb()) + "\nbatches=" +
           std::to_string(server.dispatcher().batchCount());
  }
};

struct StoredEvent {
  std::string method, path, query, contentType, remoteAddr, entrypointId, receivedAt;
  std::string body;
  int64_t bodySize = 0;
  json headers;
  std::optional<std::string> idempotencyKey;
};

StoredEvent readEvent(const std::filesystem::path& file, const std::string& id) {
  SQLite::Database db = openReadOnly(file);
  SQLite::Statement q(db,
                      "SELECT method, path, query, content_type, remote_addr, entrypoint_id, "
                      "body, body_size, headers, idempotency_key, received_at "
                      "FROM events WHERE id = ?");
  q.bind(1, id);
  StoredEvent e;
  if (!q.executeStep()) {
    FAIL("no event row " << id);
    return e;
  }
  e.method = q.getColumn(0).getString();
  e.path = q.getColumn(1).getString();
  e.query = q.getColumn(2).getString();
  e.contentType = q.getColumn(3).getString();
  e.remoteAddr = q.getColumn(4).getString();
  e.entrypointId = q.getColumn(5).getString();
  const SQLite::Column body = q.getColumn(6);
  e.body.assign(static_cast<const char*>(body.getBlob()), static_cast<size_t>(body.getBytes()));
  e.bodySize = q.getColumn(7).getInt64();
  e.headers = json::parse(q.getColumn(8).getString(), nullptr, false);
  if (!q.getColumn(9).isNull()) e.idempotencyKey = q.getColumn(9).getString();
  e.receivedAt = q.getColumn(10).getString();
  return e;
}

struct StoredDeliveryRow {
  std::string targetId;
  std::string status;
  int attempts = -1;
};

// delivery id → row, for one event.
std::map<std::string, StoredDeliveryRow> readDeliveries(const std::filesystem::path& file,
                                                        const std::string& eventId) {
  SQLite::Database db = openReadOnly(file);
  SQLite::Statement q(db,
                      "SELECT id, target_id, status, attempts FROM deliveries WHERE event_id = ?");
  q.bind(1, eventId);
  std::map<std::string, StoredDeliveryRow> out;
  while (q.executeStep())
    out[q.getColumn(0).getString()] = {q.getColumn(1).getString(), q.getColumn(2).getString(),
                                       q.getColumn(3).getInt()};
  return out;
}

bool hasHeader(const json& headers, const std::string& name, const std::string& value) {
  for (const json& pair : headers)
    if (pair.is_array() && pair.size() == 2 && pair[0] == name && pair[1] == value) return true;
  return false;
}

// Checks a 200 ingest end to end: the answer, the event row, one pending
// delivery per active target, and the one batch the dispatcher got.
// Returns the event id.
std::string checkAccepted(Hook& hook, const httplib::Result& res, const std::string& sentBody,
                          const std::string& contentType, bool bodyInline) {
  REQUIRE(statusOf(res) == 200);
  const json answer = jsonOf(res);
  REQUIRE(answer.is_object());
  REQUIRE(answer["event_id"].is_string());
  const std::string eventId = answer["event_id"].get<std::string>();
  CHECK(webhooker::isUuid(eventId));
  CHECK(answer["deliveries"] == 2);
  CHECK(answer["duplicate"] == false);

  const StoredEvent e = readEvent(hook.eventsDb(), eventId);
  CHECK(e.method == "POST");
  CHECK(e.path == hook.hookPath());
  CHECK(e.contentType == contentType);
  CHECK(e.remoteAddr == "127.0.0.1");
  CHECK(e.entrypointId == hook.entrypointId);
  CHECK(e.bodySize == static_cast<int64_t>(sentBody.size()));
  CHECK(e.body.size() == sentBody.size());
  CHECK(e.body == sentBody);

  const auto rows = readDeliveries(hook.eventsDb(), eventId);
  CHECK(rows.size() == hook.activeTargets.size());
  std::set<std::string> targetsWithDelivery;
  for (const auto& [id, row] : rows) {
    CHECK(row.status == "pending");
    CHECK(row.attempts == 0);
    targetsWithDelivery.insert(row.targetId);
  }
  std::set<std::string> expected;
  for (const auto& [id, type] : hook.activeTargets) expected.insert(id);
  CHECK(targetsWithDelivery == expected);
  CHECK(targetsWithDelivery.count(hook.inactiveTargetId) == 0);
  CHECK(targetsWithDelivery.count(hook.deletedTargetId) == 0);

  // The last batch is this event's, with exactly its deliveries.
  const auto batches = hook.server.dispatcher().batches();
  REQUIRE(!batches.empty());
  const std::vector<Task>& batch = batches.back();
  CHECK(batch.size() == rows.size());
  std::set<std::string> taskDeliveries;
  for (const Task& t : batch) {
    taskDeliveries.insert(t.deliveryId);
    REQUIRE(rows.count(t.deliveryId) == 1);
    CHECK(t.targetId == rows.at(t.deliveryId).targetId);
    CHECK(webhooker::targetTypeWord(t.targetType) == hook.activeTargets.at(t.targetId));
    CHECK(t.eventId == eventId);
    CHECK(t.webhookId == hook.webhookId);
    CHECK(t.attempt == 1);
    if (bodyInline) {
      REQUIRE(t.payload);
      CHECK(t.payload == batch.front().payload);  // one for all targets, not a copy each
      CHECK(t.payload->method == "POST");
      CHECK(t.payload->contentType == contentType);
      CHECK(t.payload->body == sentBody);
      CHECK(t.payload->receivedAt == e.receivedAt);
      json headers = json::array();
      for (const auto& [name, value] : t.payload->headers) headers.push_back({name, value});
      CHECK(headers == e.headers);  // what is forwarded is what was stored
    } else {
      CHECK_FALSE(t.payload);
    }
  }
  CHECK(taskDeliveries.size() == batch.size());
  return eventId;
}

// Runs a request that must be refused and checks it wrote and handed over
// nothing.
template <typename Send>
httplib::Result refused(Hook& hook, Send send) {
  const int64_t eventsBefore = hook.events();
  const int64_t deliveriesBefore = hook.deliveries();
  const std::string before = hook.state();
  httplib::Result res = send();
  CHECK(hook.events() == eventsBefore);
  CHECK(hook.deliveries() == deliveriesBefore);
  CHECK(hook.state() == before);
  return res;
}

TEST_CASE("a JSON body is stored byte for byte with the request's metadata") {
  Hook hook;
  const std::string body = R"({"order": 42, "note": "caf\u00e9 ☕", "items": [1, 2, 3]})";
  auto c = hook.server.anonymousClient();
  auto res = c.Post(hook.hookPath() + "?a=1&b=two%20words",
                    {{"X-Custom-One", "first"},
                     {"X-Signature", "sha256=abc123"},
                     {"X-Repeated", "one"},
                     {"X-Repeated", "two"},
                     {"authorization", "Bearer sender-token"},
                     {"Proxy-Authorization", "Basic c2VuZGVyOnB3"},
                     {"Cookie", "session=sender-cookie"}},
                    body, "application/json");
  const std::string eventId = checkAccepted(hook, res, body, "application/json", true);

  const auto e = readEvent(hook.eventsDb(), eventId);
  CHECK(e.query == "a=1&b=two%20words");
  CHECK_FALSE(e.idempotencyKey.has_value());
  REQUIRE(e.headers.is_array());
  for (const json& pair : e.headers) {
    REQUIRE(pair.is_array());
    REQUIRE(pair.size() == 2);
    CHECK(pair[0].is_string());
    CHECK(pair[1].is_string());
    // Nothing about the socket is added to the sender's headers.
    CHECK(pair[0] != "REMOTE_ADDR");
    CHECK(pair[0] != "REMOTE_PORT");
  }
  // The sender's credentials were for us: not stored, so never forwarded.
  for (const char* secret : {"sender-token", "c2VuZGVyOnB3", "sender-cookie"})
    CHECK(e.headers.dump().find(secret) == std::string::npos);
  CHECK(hasHeader(e.headers, "X-Custom-One", "first"));
  CHECK(hasHeader(e.headers, "X-Signature", "sha256=abc123"));
  CHECK(hasHeader(e.headers, "Content-Type", "application/json"));
  // A repeated header keeps every value, in the order sent.
  std::vector<std::string> repeated;
  for (const json& pair : e.headers)
    if (pair[0] == "X-Repeated") repeated.push_back(pair[1].get<std::string>());
  CHECK(repeated == std::vector<std::string>{"one", "two"});
  CHECK(hook.events() == 1);
  CHECK(hook.deliveries() == 2);
  CHECK(hook.server.dispatcher().batchCount() == 1);
}

TEST_CASE("a binary body with NUL and 0xFF bytes is stored and handed over unchanged") {
  Hook hook;
  auto res = hook.post(kBinaryBody, "application/octet-stream");
  checkAccepted(hook, res, kBinaryBody, "application/octet-stream", true);
}

TEST_CASE("bodies up to 16 KiB travel inline in the task, larger ones are read later") {
  Hook hook;
  std::string atLimit(Task::kInlineBodyLimit, '\0');
  for (size_t i = 0; i < atLimit.size(); ++i) atLimit[i] = static_cast<char>(i * 7 % 256);
  checkAccepted(hook, hook.post(atLimit, "application/octet-stream"), atLimit,
                "application/octet-stream", true);

  const std::string overLimit = atLimit + "x";
  checkAccepted(hook, hook.post(overLimit, "application/octet-stream"), overLimit,
                "application/octet-stream", false);

  std::string big(100 * 1000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 % 251);
  checkAccepted(hook, hook.post(big, "application/octet-stream"), big,
                "application/octet-stream", false);
  CHECK(hook.events() == 3);
}

TEST_CASE("an entrypoint id is accepted in uppercase too") {
  Hook hook;
  std::string upper = hook.entrypointId;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  REQUIRE(upper != hook.entrypointId);
  auto res = hook.post("{}", "application/json", {}, "/hooks/" + upper);
  CHECK(statusOf(res) == 200);
  CHECK(hook.events() == 1);
}

TEST_CASE("unknown and malformed entrypoint ids are 404 and write nothing") {
  Hook hook;
  const std::vector<std::string> ids = {
      webhooker::newUuid(),                       // well formed, unknown
      hook.webhookId,                             // a webhook id is not an entrypoint id
      hook.activeTargets.begin()->first,          // nor is a target id
      "not-a-uuid",
      hook.entrypointId + "0",
      hook.entrypointId.substr(1),
      "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz",
  };
  for (const std::string& id : ids) {
    CAPTURE(id);
    auto res =
        refused(hook, [&] { return hook.post("{}", "application/json", {}, "/hooks/" + id); });
    CHECK(statusOf(res) == 404);
    CHECK(errorCode(res) == "not_found");
  }
  // No id at all: no route, still our error shape.
  auto res = refused(hook, [&] { return hook.post("{}", "application/json", {}, "/hooks/"); });
  CHECK(statusOf(res) == 404);
  CHECK(errorCode(res) == "not_found");
  CHECK(hook.events() == 0);
}

// GET is routed (a provider's handshake, docs/providers.md): on an entrypoint
// without one it is 405 with Allow: POST; other methods are refused by the
// router, whose Allow names the route's methods.
TEST_CASE("methods other than POST are 405 with Allow") {
  Hook hook;
  auto c = hook.server.anonymousClient();
  const std::string path = hook.hookPath();
  const std::vector<std::pair<std::string, std::function<httplib::Result()>>> calls = {
      {"GET", [&] { return c.Get(path); }},
      {"PUT", [&] { return c.Put(path, "{}", "application/json"); }},
      {"DELETE", [&] { return c.Delete(path); }},
      {"PATCH", [&] { return c.Patch(path, "{}", "application/json"); }},
  };
  // Named copies, not structured bindings: CAPTURE's lambda cannot refer to
  // a binding with clang 14.
  for (const auto& entry : calls) {
    const std::string& method = entry.first;
    CAPTURE(method);
    auto res = refused(hook, entry.second);
    CHECK(statusOf(res) == 405);
    REQUIRE(res);
    CHECK(res->get_header_value("Allow") == (method == "GET" ? "POST" : "POST, GET, HEAD"));
    CHECK(errorCode(res) == "method_not_allowed");
  }
}

TEST_CASE("the header limits are inclusive: 256 headers and 64 KiB of them pass, one more is 431") {
  TestServer server;
  const json webhook = server.createWebhook("shop");
  const std::string path = "/hooks/" + webhook["entrypoints"][0]["id"].get<std::string>();
  // Three headers of 35 bytes (names and values) on every request here.
  const std::string head = "POST " + path +
                           " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n";
  constexpr size_t kBaseCount = 3;
  constexpr size_t kBaseBytes = 35;
  const auto statusWith = [&](const std::string& extraHeaders) {
    RawConnection c(server.port());
    REQUIRE(c.send(head + extraHeaders + "\r\n{}"));
    const auto answer = c.read();
    return answer ? answer->status : -1;
  };
  // `count` more headers of a few bytes each.
  const auto manyHeaders = [](size_t count) {
    std::string out;
    for (size_t i = 0; i < count; ++i) out += "X-H" + std::to_string(i) + ": v\r\n";
    return out;
  };
  // Headers of `bytes` names and values in all, none over the 8 KiB line limit.
  const auto headerBytes = [](size_t bytes) {
    std::string out;
    for (int i = 0; bytes > 0; ++i) {
      const std::string name = "X-Fill-" + std::to_string(i);
      const size_t value = std::min<size_t>(bytes - name.size(), 7000);
      out += name + ": " + std::string(value, 'v') + "\r\n";
      bytes -= name.size() + value;
    }
    return out;
  };

  CHECK(statusWith(manyHeaders(256 - kBaseCount)) == 200);
  CHECK(statusWith(manyHeaders(257 - kBaseCount)) == 431);
  CHECK(statusWith(headerBytes(64 * 1024 - kBaseBytes)) == 200);
  CHECK(statusWith(headerBytes(64 * 1024 + 1 - kBaseBytes)) == 431);
  CHECK(countRows(server.dataDir() / ("events-" + webhook["id"].get<std::string>() + ".db"),
                  "events") == 2);
}

TEST_CASE("a deactivated entrypoint answers 410 until it is reactivated") {
  Hook hook;
  auto admin = hook.server.client();
  const std::string epPath =
      "/api/v1/webhooks/" + hook.webhookId + "/entrypoints/" + hook.entrypointId;
  REQUIRE(statusOf(patchJson(admin, epPath, {{"active", false}})) == 200);

  auto res = refused(hook, [&] { return hook.post(R"({"a":1})"); });
  CHECK(statusOf(res) == 410);
  CHECK(errorCode(res) == "entrypoint_inactive");

  REQUIRE(statusOf(patchJson(admin, epPath, {{"active", true}})) == 200);
  checkAccepted(hook, hook.post(R"({"a":1})"), R"({"a":1})", "application/json", true);
}

TEST_CASE("ingest follows admin changes at once, whatever it keeps in memory") {
  Hook hook;
  auto admin = hook.server.client();
  checkAccepted(hook, hook.post("{}"), "{}", "application/json", true);

  // A new target gets deliveries from the next event on.
  const json added = hook.server.createTarget(hook.webhookId, {{"name", "more"}, {"type", "log"}});
  hook.activeTargets[added["id"].get<std::string>()] = "log";
  auto res = hook.post("{}");
  REQUIRE(statusOf(res) == 200);
  CHECK(jsonOf(res)["deliveries"] == 3);

  // Deactivated, it gets none.
  const std::string targetPath =
      "/api/v1/webhooks/" + hook.webhookId + "/targets/" + added["id"].get<std::string>();
  REQUIRE(statusOf(patchJson(admin, targetPath, {{"active", false}})) == 200);
  hook.activeTargets.erase(added["id"].get<std::string>());
  checkAccepted(hook, hook.post("{}"), "{}", "application/json", true);

  // A deleted entrypoint is unknown at once.
  REQUIRE(statusOf(admin.Delete("/api/v1/webhooks/" + hook.webhookId + "/entrypoints/" +
                                hook.entrypointId)) == 204);
  auto gone = refused(hook, [&] { return hook.post("{}"); });
  CHECK(statusOf(gone) == 404);
}

TEST_CASE("while the events DB stays locked, each concurrent ingest is 503 and nothing is kept") {
  TestServerOptions options;
  options.busyTimeoutMs = 100;
  Hook hook(options);
  checkAccepted(hook, hook.post("{}"), "{}", "application/json", true);
  hook.server.dispatcher().clear();

  // Another connection (an operator's sqlite3 shell) holds the write lock
  // past the busy timeout: the group commits of these ingests cannot begin.
  SQLite::Database other(hook.eventsDb().string(), SQLite::OPEN_READWRITE);
  other.exec("BEGIN IMMEDIATE");
  constexpr int kPosts = 6;
  std::mutex resultsMutex;  // guards statuses and codes
  std::vector<int> statuses;
  std::vector<std::string> codes;
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < kPosts; ++i)
      threads.emplace_back([&, i] {
        auto res = hook.post(json{{"n", i}}.dump());
        std::lock_guard lock(resultsMutex);
        statuses.push_back(statusOf(res));
        codes.push_back(errorCode(res));
      });
  }
  other.exec("ROLLBACK");
  CHECK(statuses == std::vector<int>(kPosts, 503));
  CHECK(codes == std::vector<std::string>(kPosts, "storage_unavailable"));
  CHECK(hook.events() == 1);
  CHECK(hook.deliveries() == 2);
  CHECK(hook.server.dispatcher().batchCount() == 0);

  checkAccepted(hook, hook.post("{}"), "{}", "application/json", true);
}

TEST_CASE("opening one webhook's events file holds up no other webhook's ingest") {
  TestServerOptions options;
  options.busyTimeoutMs = 60'000;  // the open below waits as long as the file stays locked
  TestServer server(options);
  const json slow = server.createWebhook("slow");
  const json quick = server.createWebhook("quick");
  const std::string slowId = slow["id"], slowEntrypoint = slow["entrypoints"][0]["id"];
  const std::string quickId = quick["id"], quickEntrypoint = quick["entrypoints"][0]["id"];
  const auto post = [&](const std::string& entrypoint) {
    auto client = server.anonymousClient();
    client.set_read_timeout(10, 0);
    return statusOf(client.Post("/hooks/" + entrypoint, "{}", "application/json"));
  };
  REQUIRE(post(slowEntrypoint) == 200);
  REQUIRE(post(quickEntrypoint) == 200);

  // The pool closes the slow webhook's file; an operator's sqlite3 shell then
  // keeps it to itself, so opening it again waits for the shell.
  server.eventsDbs().letGo(slowId);
  std::optional<SQLite::Database> shell;
  shell.emplace(server.eventsDbPath(slowId).string(), SQLite::OPEN_READWRITE, 10'000);
  shell->exec("PRAGMA locking_mode = EXCLUSIVE");
  shell->exec("BEGIN EXCLUSIVE");  // waits for the pool's closer
  shell->exec("COMMIT");

  const uint64_t getsBefore = server.eventsDbs().use().gets;
  std::atomic<int> slowStatus{-1};
  std::jthread slowPost([&] { slowStatus = post(slowEntrypoint); });
  REQUIRE(eventually([&] { return server.eventsDbs().use().gets > getsBefore; }));

  CHECK(post(quickEntrypoint) == 200);
  CHECK(slowStatus == -1);  // still opening its file
  shell.reset();
  slowPost.join();
  CHECK(slowStatus == 200);
  CHECK(countRows(server.eventsDbPath(slowId), "events") == 2);
  CHECK(countRows(server.eventsDbPath(quickId), "events") == 2);
}

TEST_CASE("a body over the limit is 413 and writes nothing") {
  Hook hook(withBodyLimit(1024));
  const std::string atLimit(1024, 'a');
  checkAccepted(hook, hook.post(atLimit, "text/plain"), atLimit, "text/plain", true);

  SUBCASE("with Content-Length") {
    auto res = refused(hook, [&] { return hook.post(std::string(1025, 'a'), "text/plain"); });
    CHECK(statusOf(res) == 413);
    CHECK(errorCode(res) == "body_too_large");
    res = refused(hook, [&] { return hook.post(std::string(64 * 1024, 'b'), "text/plain"); });
    CHECK(statusOf(res) == 413);
    CHECK(errorCode(res) == "body_too_large");
  }

  // Transfer-Encoding: chunked carries no length to check up front.
  auto postChunked = [&](size_t chunks, size_t chunkSize, char fill) {
    auto c = hook.server.anonymousClient();
    return c.Post(
        hook.hookPath(),
        [chunks, chunkSize, fill, sent = size_t{0}](size_t, httplib::DataSink& sink) mutable {
          if (sent == chunks) {
            sink.done();
            return true;
          }
          const std::string chunk(chunkSize, fill);
          ++sent;
          return sink.write(chunk.data(), chunk.size());
        },
        "text/plain");
  };

  SUBCASE("chunked, under the limit, is stored whole") {
    checkAccepted(hook, postChunked(3, 100, 'c'), std::string(300, 'c'), "text/plain", true);
  }

  SUBCASE("chunked, over the limit") {
    // The server stops reading at the limit, answers 413 and closes; a
    // client still sending may see its write fail instead of the answer.
    auto res = refused(hook, [&] { return postChunked(8, 1000, 'd'); });
    if (res) {
      CHECK(statusOf(res) == 413);
      CHECK(errorCode(res) == "body_too_large");
    } else {
      CHECK((res.error() == httplib::Error::Canceled || res.error() == httplib::Error::Write ||
             res.error() == httplib::Error::Read));
    }
  }
}

TEST_CASE("after stopAccepting ingest answers 503 and stores nothing") {
  Hook hook;
  checkAccepted(hook, hook.post("{}"), "{}", "application/json", true);
  hook.server.http().stopAccepting();
  auto res = refused(hook, [&] { return hook.post(R"({"late": true})"); });
  CHECK(statusOf(res) == 503);
  CHECK(errorCode(res) == "shutting_down");
  REQUIRE(res);
  CHECK(res->has_header("Retry-After"));

  auto c = hook.server.anonymousClient();
  CHECK(statusOf(c.Get("/readyz")) == 503);
  CHECK(hook.events() == 1);
}

TEST_CASE("idempotency keys: a repeat within 24 h returns the first event and creates nothing") {
  FakeClock clock;
  Hook hook(withClock(clock));

  auto postWith = [&](const std::string& header, const std::string& key,
                      const std::string& body = R"({"n": 1})") {
    return hook.post(body, "application/json", {{header, key}});
  };

  for (const std::string header : {"Idempotency-Key", "webhook-id"}) {
    CAPTURE(header);
    hook.server.dispatcher().clear();
    const int64_t eventsBefore = hook.events();
    const double receivedBefore = hook.eventsReceived();
    const std::string key = header + "-order-1";
    auto first = postWith(header, key);
    REQUIRE(statusOf(first) == 200);
    const json a = jsonOf(first);
    CHECK(a["duplicate"] == false);
    CHECK(a["deliveries"] == 2);
    const std::string eventId = a["event_id"].get<std::string>();
    CHECK(readEvent(hook.eventsDb(), eventId).idempotencyKey == key);
    CHECK(hook.server.dispatcher().batchCount() == 1);

    // Same key, even with another body: the first event, nothing new, and
    // nothing queued (the first event's deliveries were counted once).
    auto again = refused(hook, [&] { return postWith(header, key, R"({"n": 2})"); });
    REQUIRE(statusOf(again) == 200);
    const json b = jsonOf(again);
    CHECK(b["event_id"] == eventId);
    CHECK(b["duplicate"] == true);
    CHECK(b["deliveries"] == 0);
    CHECK(hook.events() == eventsBefore + 1);
    CHECK(countRows(hook.eventsDb(), "events", "idempotency_key = '" + key + "'") == 1);
    CHECK(hook.eventsReceived() == receivedBefore + 1);  // a duplicate is no event received

    // Another key is another event.
    auto other = postWith(header, key + "-b");
    REQUIRE(statusOf(other) == 200);
    CHECK(jsonOf(other)["event_id"] != eventId);
    CHECK(jsonOf(other)["duplicate"] == false);
    CHECK(hook.events() == eventsBefore + 2);
    CHECK(hook.eventsReceived() == receivedBefore + 2);
  }

  SUBCASE("the window is 24 h") {
    auto first = postWith("Idempotency-Key", "windowed");
    REQUIRE(statusOf(first) == 200);
    const std::string eventId = jsonOf(first)["event_id"].get<std::string>();

    clock.advance(24h - 1s);
    auto inside = refused(hook, [&] { return postWith("Idempotency-Key", "windowed"); });
    CHECK(jsonOf(inside)["event_id"] == eventId);
    CHECK(jsonOf(inside)["duplicate"] == true);

    clock.advance(2s);
    const int64_t before = hook.events();
    auto after = postWith("Idempotency-Key", "windowed");
    REQUIRE(statusOf(after) == 200);
    CHECK(jsonOf(after)["event_id"] != eventId);
    CHECK(jsonOf(after)["duplicate"] == false);
    CHECK(hook.events() == before + 1);
  }

  SUBCASE("with both headers Idempotency-Key is the key; an empty key is refused") {
    auto both = hook.post(R"({"n": 1})", "application/json",
                          {{"Idempotency-Key", "general"}, {"webhook-id", "msg_1"}});
    REQUIRE(statusOf(both) == 200);
    CHECK(readEvent(hook.eventsDb(), jsonOf(both)["event_id"]).idempotencyKey == "general");
    // An empty key would make every such event a duplicate of the first.
    auto empty = refused(hook, [&] { return postWith("Idempotency-Key", ""); });
    CHECK(statusOf(empty) == 400);
    CHECK(errorCode(empty) == "invalid_idempotency_key");
  }

  SUBCASE("a key of 256 characters is refused, 255 is fine") {
    for (const std::string header : {"Idempotency-Key", "webhook-id"}) {
      CAPTURE(header);
      auto res = refused(hook, [&] { return postWith(header, std::string(256, 'k')); });
      CHECK(statusOf(res) == 400);
      CHECK(errorCode(res) == "invalid_idempotency_key");
    }
    CHECK(statusOf(postWith("Idempotency-Key", std::string(255, 'k'))) == 200);
  }
}

TEST_CASE("concurrent ingest: 8 threads x 25 posts are 200 distinct stored events") {
  Hook hook;
  constexpr int kThreads = 8;
  constexpr int kPerThread = 25;
  std::mutex resultsMutex;  // guards ids and failures
  std::vector<std::string> ids;
  std::vector<std::string> failures;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        auto c = hook.server.anonymousClient();
        for (int i = 0; i < kPerThread; ++i) {
          const std::string body = json{{"thread", t}, {"i", i}}.dump();
          auto res = c.Post(hook.hookPath(), body, "application/json");
          std::lock_guard lock(resultsMutex);
          if (statusOf(res) != 200) {
            failures.push_back(res ? res->body : httplib::to_string(res.error()));
            continue;
          }
          ids.push_back(jsonOf(res)["event_id"].get<std::string>());
        }
      });
    }
  }
  CHECK(failures.empty());
  CHECK(ids.size() == kThreads * kPerThread);
  const std::set<std::string> distinct(ids.begin(), ids.end());
  CHECK(distinct.size() == kThreads * kPerThread);

  CHECK(hook.events() == kThreads * kPerThread);
  CHECK(hook.deliveries() == 2 * kThreads * kPerThread);
  CHECK(countRows(hook.eventsDb(), "(SELECT DISTINCT body FROM events)") ==
        kThreads * kPerThread);
  SQLite::Database db = openReadOnly(hook.eventsDb());
  SQLite::Statement q(db, "SELECT id FROM events");
  std::set<std::string> stored;
  while (q.executeStep()) stored.insert(q.getColumn(0).getString());
  CHECK(stored == distinct);
  CHECK(hook.server.dispatcher().batchCount() == kThreads * kPerThread);
  CHECK(hook.server.dispatcher().tasks().size() == 2 * kThreads * kPerThread);
}

}  // namespace
