// Masking: once every delivery of an event is final, the retention pass
// replaces the values its webhook's mask_pointers name with "[masked]" in the
// stored body — and the old value is then nowhere in the database's bytes,
// neither in the file nor in its WAL. Real SQLite files, the real pass.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/retention_pruner.h"
#include "storage/events_db.h"
#include "storage/events_db_pool.h"
#include "storage/main_store.h"
#include "tests/support/ingested_event.h"
#include "tests/support/retention_folder.h"

namespace {

using nlohmann::json;
using webhooker::AttemptRecord;
using webhooker::EventsDb;
using webhooker::Webhook;
using webhooker::testing::IngestedEvent;
using webhooker::testing::ingestEvent;
using webhooker::testing::RetentionFolder;
using Status = webhooker::DeliveryStatus;

struct Fixture : RetentionFolder {
  std::string webhookId;
  std::shared_ptr<EventsDb> db;

  explicit Fixture(const std::vector<std::string>& maskPointers) {
    auto w = store->createWebhook("hook", "", 30, Webhook::kDefaultMaxEvents, maskPointers);
    REQUIRE(w.ok());
    webhookId = w->id;
    auto d = pool.get(webhookId);
    REQUIRE(d.ok());
    db = d.value();
  }

  std::filesystem::path file() const { return pool.pathFor(webhookId); }
};

void finish(EventsDb& db, const std::string& deliveryId, Status newStatus) {
  AttemptRecord a;
  a.deliveryId = deliveryId;
  const auto current = db.getDelivery(deliveryId);  // the next attempt follows the recorded ones
  REQUIRE(current);
  a.attempt = current->attempts + 1;
  a.statusCode = newStatus == Status::kDelivered ? 200 : 500;
  a.success = newStatus == Status::kDelivered;
  a.newStatus = newStatus;
  REQUIRE(db.recordAttempt(a).ok());
}

void finishAll(EventsDb& db, const IngestedEvent& s) {
  for (const std::string& d : s.deliveryIds) finish(db, d, Status::kDelivered);
}

struct Row {
  std::string body;
  int64_t bodySize = 0;
  std::optional<int> masked;
};

Row row(const std::filesystem::path& file, const std::string& eventId) {
  SQLite::Database raw(file.string(), SQLite::OPEN_READONLY);
  SQLite::Statement q(raw, "SELECT body, body_size, masked FROM events WHERE id = ?");
  q.bind(1, eventId);
  REQUIRE(q.executeStep());
  Row r;
  const SQLite::Column body = q.getColumn(0);
  r.body.assign(static_cast<const char*>(body.getBlob()), static_cast<size_t>(body.getBytes()));
  r.bodySize = q.getColumn(1).getInt64();
  if (!q.getColumn(2).isNull()) r.masked = q.getColumn(2).getInt();
  return r;
}

std::string fileBytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The bytes of the database file and its WAL, as anyone with the disk sees them.
std::string diskBytes(const std::filesystem::path& file) {
  std::string bytes = fileBytes(file);
  if (std::filesystem::exists(file.string() + "-wal")) bytes += fileBytes(file.string() + "-wal");
  return bytes;
}

}  // namespace

TEST_CASE("nested members, array elements and escaped names are masked; the rest is kept") {
  Fixture f({"/user/email", "/card/number", "/items/0/sku", "/a~1b", "/m~0n", "/missing/x",
             "/items/7/sku", "/keep/deeper"});
  const std::string body = R"({
    "user": {"email": "alice@example.com", "name": "Alice"},
    "card": {"number": "4111111111111111", "brand": "visa"},
    "items": [{"sku": "SKU-1", "qty": 2}, {"sku": "SKU-2", "qty": 1}],
    "a/b": "slash value", "a": {"b": "not this one"},
    "m~n": "tilde value",
    "keep": 1
  })";
  const IngestedEvent s = ingestEvent(*f.db, body, 2);
  finishAll(*f.db, s);

  const auto stats = f.pass();
  CHECK(stats.masked == 1);
  const Row r = row(f.file(), s.eventId);
  CHECK(r.masked == 1);
  // Compact, with the sender's member order.
  CHECK(r.body ==
        R"({"user":{"email":"[masked]","name":"Alice"},)"
        R"("card":{"number":"[masked]","brand":"visa"},)"
        R"("items":[{"sku":"[masked]","qty":2},{"sku":"SKU-2","qty":1}],"a/b":"[masked]",)"
        R"("a":{"b":"not this one"},"m~n":"[masked]","keep":1})");
  CHECK(r.bodySize == static_cast<int64_t>(r.body.size()));

  // What a replay would send is the masked form.
  auto payload = f.db->loadPayload(s.eventId);
  REQUIRE(payload.ok());
  CHECK(payload->body == r.body);

  // Masked events are not looked at again.
  CHECK(f.pass().examined == 0);
}

TEST_CASE("a whole subtree, a top-level array and the whole document") {
  Fixture f({"/profile", "/0/token"});
  const IngestedEvent object =
      ingestEvent(*f.db, R"({"profile": {"email": "x@y.z", "phones": ["1", "2"]}, "id": 7})");
  const IngestedEvent array = ingestEvent(*f.db, R"([{"token": "t-1"}, {"token": "t-2"}])");
  finishAll(*f.db, object);
  finishAll(*f.db, array);
  f.pass();
  CHECK(row(f.file(), object.eventId).body == R"({"profile":"[masked]","id":7})");
  CHECK(row(f.file(), array.eventId).body == R"([{"token":"[masked]"},{"token":"t-2"}])");

  Fixture whole({""});
  const IngestedEvent any = ingestEvent(*whole.db, R"({"everything": "secret"})");
  finishAll(*whole.db, any);
  whole.pass();
  CHECK(row(whole.file(), any.eventId).body == R"("[masked]")");
}

TEST_CASE("a JSON body no pointer matches keeps its bytes and is marked as examined") {
  Fixture f({"/user/email"});
  const std::string body = "{\n  \"order\": 42,\n  \"user\": {\"name\": \"Bob\"}\n}\n";
  const IngestedEvent s = ingestEvent(*f.db, body);
  finishAll(*f.db, s);
  const auto stats = f.pass();
  CHECK(stats.masked == 0);
  CHECK(stats.examined == 1);
  const Row r = row(f.file(), s.eventId);
  CHECK(r.body == body);
  CHECK(r.masked == 1);
}

TEST_CASE("bodies that are not JSON are left as they are, with masked = 0") {
  Fixture f({"/email"});
  const std::string form = "email=alice%40example.com&amount=5";
  const std::string binary("\x00\x01\xff{\"email\":\"x\"}", 16);
  const std::string almost = R"({"email": "alice@example.com")";  // cut short
  const std::string badUtf8 = "{\"email\": \"\xff\xfe\"}";
  // JSON up to a NUL byte (found by fuzz/masking_fuzzer): the parser alone
  // stops at the NUL, and masking would have dropped every byte after it.
  const std::string jsonThenNul("{\"email\":\"a@example.com\"}\0\x01\xffrest", 32);
  std::vector<std::pair<std::string, std::string>> events;
  for (const std::string& body : {form, binary, almost, badUtf8, jsonThenNul}) {
    const IngestedEvent s = ingestEvent(*f.db, body, 1, "application/json");
    finishAll(*f.db, s);
    events.emplace_back(s.eventId, body);
  }
  f.pass();
  for (const auto& [eventId, body] : events) {
    const Row r = row(f.file(), eventId);
    CHECK(r.masked == 0);
    CHECK(r.body == body);
  }
}

TEST_CASE("a body nested 100,000 levels deep is left as it is, and the pass survives it") {
  // Dumping it back would recurse once per level and overflow the stack.
  Fixture f({"/a"});
  const std::string deep = R"({"a":"secret","b":)" + std::string(100000, '[') +
                           std::string(100000, ']') + "}";
  const IngestedEvent s = ingestEvent(*f.db, deep);
  finishAll(*f.db, s);
  f.pass();
  const Row r = row(f.file(), s.eventId);
  CHECK(r.masked == 0);
  CHECK(r.body == deep);
}

TEST_CASE("nothing is masked while any delivery is pending or retrying") {
  Fixture f({"/secret"});
  const IngestedEvent pending = ingestEvent(*f.db, R"({"secret": "p"})", 2);
  finish(*f.db, pending.deliveryIds[0], Status::kDelivered);  // the other stays pending
  const IngestedEvent retrying = ingestEvent(*f.db, R"({"secret": "r"})", 2);
  finish(*f.db, retrying.deliveryIds[0], Status::kFailed);
  finish(*f.db, retrying.deliveryIds[1], Status::kRetrying);

  CHECK(f.pass().masked == 0);
  CHECK(row(f.file(), pending.eventId).masked == std::nullopt);
  CHECK(row(f.file(), pending.eventId).body == R"({"secret": "p"})");
  CHECK(row(f.file(), retrying.eventId).masked == std::nullopt);
  CHECK(row(f.file(), retrying.eventId).body == R"({"secret": "r"})");

  // Failed counts as final as much as delivered does.
  finish(*f.db, pending.deliveryIds[1], Status::kFailed);
  finish(*f.db, retrying.deliveryIds[1], Status::kDelivered);
  CHECK(f.pass().masked == 2);
  CHECK(row(f.file(), pending.eventId).body == R"({"secret":"[masked]"})");
  CHECK(row(f.file(), retrying.eventId).body == R"({"secret":"[masked]"})");
}

TEST_CASE("a webhook without mask pointers has its bodies left alone") {
  Fixture f({});
  const IngestedEvent s = ingestEvent(*f.db, R"({"email": "a@b.c"})");
  finishAll(*f.db, s);
  CHECK(f.pass().examined == 0);
  CHECK(row(f.file(), s.eventId).masked == std::nullopt);
  CHECK(row(f.file(), s.eventId).body == R"({"email": "a@b.c"})");
}

TEST_CASE("a changed pointer list applies to events masked before, once reset") {
  Fixture f({"/a"});
  const IngestedEvent s = ingestEvent(*f.db, R"({"a": "one", "b": "two"})");
  finishAll(*f.db, s);
  f.pass();
  CHECK(row(f.file(), s.eventId).body == R"({"a":"[masked]","b":"two"})");

  webhooker::WebhookPatch patch;
  patch.maskPointers = std::vector<std::string>{"/a", "/b"};
  REQUIRE(f.store->updateWebhook(f.webhookId, patch).ok());
  CHECK(f.pass().examined == 0);  // masked events are not looked at again...
  REQUIRE(f.db->resetMasking().ok());  // ...until the list changes (the admin API does this)
  CHECK(f.pass().masked == 1);
  CHECK(row(f.file(), s.eventId).body == R"({"a":"[masked]","b":"[masked]"})");
  CHECK(row(f.file(), s.eventId).masked == 1);
}

TEST_CASE("the masked values are nowhere in the bytes of the database file or its WAL") {
  Fixture f({"/user/email", "/card/number", "/notes", "/ssn", "/bio"});
  const std::string email = "alice.q7xk2@example.com";
  const std::string card = "4929-5551-7730-1846";
  // A body over a page spills into overflow pages, which are freed and
  // reused differently from a body that fits in its page.
  const std::string notes = "NOTE-" + std::string(20000, 'n') + "-END";
  const std::string big =
      json{{"user", {{"email", email}}}, {"notes", notes}, {"card", {{"number", card}}}}.dump();
  const std::string smallBody = json{{"card", {{"number", card}}}, {"ok", true}}.dump();
  // Fits in its page and shrinks a lot: the new row does not cover the old one.
  const std::string ssn = "SSN-078-05-1120-Q";
  const std::string medium = json{{"ssn", ssn}, {"bio", std::string(1500, 'b')}}.dump();
  std::vector<IngestedEvent> events;
  for (int i = 0; i < 5; ++i) {
    events.push_back(ingestEvent(*f.db, big, 1));
    events.push_back(ingestEvent(*f.db, smallBody, 1));
    events.push_back(ingestEvent(*f.db, medium, 1));
  }
  const IngestedEvent unfinished =
      ingestEvent(*f.db, R"({"user": {"email": "still-pending@example.com"}})");
  for (const IngestedEvent& s : events) finishAll(*f.db, s);

  // The values are on disk now (the search works), in the WAL or the file.
  REQUIRE(f.db->reclaimSpace().ok());  // half of them in the file proper
  for (int i = 0; i < 3; ++i) events.push_back(ingestEvent(*f.db, big, 1));
  for (size_t i = events.size() - 3; i < events.size(); ++i) finishAll(*f.db, events[i]);
  {
    const std::string before = diskBytes(f.file());
    CHECK(before.find(email) != std::string::npos);
    CHECK(before.find(card) != std::string::npos);
    CHECK(before.find(ssn) != std::string::npos);
    CHECK(before.find(notes.substr(0, 200)) != std::string::npos);
  }

  const auto stats = f.pass();
  CHECK(stats.masked == static_cast<int64_t>(events.size()));
  const std::string after = diskBytes(f.file());
  CHECK(after.find(email) == std::string::npos);
  CHECK(after.find(card) == std::string::npos);
  CHECK(after.find(ssn) == std::string::npos);
  CHECK(after.find("NOTE-nnnnnnnn") == std::string::npos);
  CHECK(after.find("nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn") ==
        std::string::npos);
  // The event still waiting for its delivery keeps its body as received.
  CHECK(after.find("still-pending@example.com") != std::string::npos);
  CHECK(row(f.file(), unfinished.eventId).masked == std::nullopt);
  const std::string wal = f.file().string() + "-wal";
  CHECK((!std::filesystem::exists(wal) || std::filesystem::file_size(wal) == 0));
}

TEST_CASE("rows masked among rows that stay: the old values do not linger in their pages") {
  // Pages that stay well filled are not rebuilt, so without secure_delete a
  // shrunk row's old bytes would stay in the page's free space.
  Fixture f({"/ssn", "/bio"});
  const std::string ssn = "SSN-219-09-9999-Z";
  const std::string medium = json{{"ssn", ssn}, {"bio", std::string(700, 'b')}}.dump();
  const std::string other = json{{"kept", std::string(300, 'k')}}.dump();
  std::vector<IngestedEvent> masked;
  for (int i = 0; i < 20; ++i) {
    masked.push_back(ingestEvent(*f.db, medium, 1));
    for (int j = 0; j < 4; ++j) ingestEvent(*f.db, other, 1);  // pending: not masked
  }
  for (const IngestedEvent& s : masked) finishAll(*f.db, s);
  REQUIRE(f.db->reclaimSpace().ok());
  REQUIRE(diskBytes(f.file()).find(ssn) != std::string::npos);
  CHECK(f.pass().masked == 20);
  CHECK(diskBytes(f.file()).find(ssn) == std::string::npos);
}
