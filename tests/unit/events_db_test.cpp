// EventsDb on a real events-<uuid>.db: what ingest writes (byte for byte),
// the idempotency window, the delivery_history view (made by the sqlite3
// user, `webhooker history-view`), and that no target
// config ever lands in the file. Checked by reading the file with SQLiteCpp.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <thread>
#include <vector>

#include "base/error_codes.h"
#include "base/time_format.h"
#include "base/uuid.h"
#include "storage/events_db.h"
#include "storage/migration.h"
#include "storage/schema.h"
#include "storage/sqlite_database.h"
#include "storage/statement_cache.h"
#include "tests/support/db_file.h"
#include "tests/support/eventually.h"
#include "tests/support/text_pattern.h"

namespace {

using namespace std::chrono_literals;
using webhooker::DbOptions;
using webhooker::EventsDb;
using webhooker::InboundEvent;
using webhooker::IngestOutcome;
using webhooker::testing::DbFile;
using webhooker::testing::matchesWhole;
using webhooker::testing::sqlText;

constexpr std::chrono::milliseconds kWindow = 24h;
constexpr const char* kStart = "2026-11-18T11:06:40.000Z";

// Binary on purpose: NUL bytes, 0xFF, a lone UTF-8 continuation byte.
// Split literal: "\x00ab" would be one hex escape (0xab), making the
// literal shorter than 10 bytes (an overflow ASan found).
const std::string kBinaryBody("\x00\x01\xff\xfe\x00" "ab\x80\x00\xff", 10);

InboundEvent sampleEvent() {
  InboundEvent e;
  e.entrypointId = "8b0e4a7e-2f4c-4d7b-9a55-1c2d3e4f5a6b";
  e.method = "POST";
  e.path = "/hooks/8b0e4a7e-2f4c-4d7b-9a55-1c2d3e4f5a6b";
  e.query = "a=1&b=two";
  e.headers = {{"Content-Type", "application/octet-stream"},
               {"X-Trace", "first"},
               {"x-trace", "second"},
               {"User-Agent", "test/1.0"}};
  e.contentType = "application/octet-stream";
  e.body = kBinaryBody;
  e.remoteAddr = "203.0.113.9";
  return e;
}

struct Fixture : DbFile {
  std::shared_ptr<EventsDb> db = openDb();

  Fixture() : DbFile("events-8b0e4a7e-2f4c-4d7b-9a55-1c2d3e4f5a6b.db") {}

  std::shared_ptr<EventsDb> openDb() {
    auto r = EventsDb::open(file, DbOptions{}, clock);
    if (!r) FAIL("open failed: " << r.error().code << ": " << r.error().message);
    return r.value();
  }

  // `threads` × `each` events for `target`, ingested at once, so they
  // commit in groups.
  void ingestConcurrently(int threads, int each, const std::string& target) {
    std::atomic<int> failures{0};
    std::vector<std::thread> running;
    for (int t = 0; t < threads; ++t)
      running.emplace_back([&] {
        for (int i = 0; i < each; ++i)
          if (!db->ingest(sampleEvent(), {target}, kWindow)) ++failures;
      });
    for (auto& th : running) th.join();
    REQUIRE(failures.load() == 0);
  }

  IngestOutcome ingestOk(const InboundEvent& e, const std::vector<std::string>& targets) {
    auto r = db->ingest(e, targets, kWindow);
    if (!r) FAIL("ingest failed: " << r.error().code << ": " << r.error().message);
    return r.value();
  }
};

}  // namespace

TEST_CASE_FIXTURE(Fixture, "open creates the events file with its schema") {
  CHECK(std::filesystem::exists(file));
  CHECK(db->schemaVersion() == webhooker::eventsMigrations().back().version);
  SQLite::Database r = raw();
  CHECK(r.tableExists("events"));
  CHECK(r.tableExists("deliveries"));
  CHECK(r.tableExists("delivery_results"));
}

TEST_CASE_FIXTURE(Fixture, "ingest stores the event byte for byte") {
  const InboundEvent e = sampleEvent();
  const IngestOutcome out = ingestOk(e, {});
  CHECK(webhooker::isUuid(out.eventId));
  CHECK_FALSE(out.duplicate);
  CHECK(out.receivedAt == kStart);

  SQLite::Database r = raw();
  SQLite::Statement q(r,
                      "SELECT id, entrypoint_id, method, path, query, content_type, body, "
                      "body_size, remote_addr, idempotency_key, received_at, typeof(body) "
                      "FROM events");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == out.eventId);
  CHECK(q.getColumn(1).getString() == e.entrypointId);
  CHECK(q.getColumn(2).getString() == "POST");
  CHECK(q.getColumn(3).getString() == e.path);
  CHECK(q.getColumn(4).getString() == "a=1&b=two");
  CHECK(q.getColumn(5).getString() == "application/octet-stream");
  CHECK(q.getColumn(11).getString() == "blob");
  const SQLite::Column body = q.getColumn(6);
  CHECK(body.isBlob());
  REQUIRE(body.getBytes() == static_cast<int>(kBinaryBody.size()));
  CHECK(std::memcmp(body.getBlob(), kBinaryBody.data(), kBinaryBody.size()) == 0);
  CHECK(q.getColumn(7).getInt64() == 10);
  CHECK(q.getColumn(8).getString() == "203.0.113.9");
  CHECK(q.getColumn(9).isNull());
  CHECK(q.getColumn(10).getString() == kStart);
  CHECK_FALSE(q.executeStep());
}

TEST_CASE_FIXTURE(Fixture, "headers are a JSON array of [name, value] pairs in arrival order") {
  const IngestOutcome out = ingestOk(sampleEvent(), {});
  const std::string text =
      raw().execAndGet("SELECT headers FROM events WHERE id = " + sqlText(out.eventId)).getString();
  CHECK(text ==
        R"([["Content-Type","application/octet-stream"],["X-Trace","first"],)"
        R"(["x-trace","second"],["User-Agent","test/1.0"]])");
  const auto parsed = nlohmann::json::parse(text);
  REQUIRE(parsed.is_array());
  REQUIRE(parsed.size() == 4);
  CHECK(parsed[1] == nlohmann::json::array({"X-Trace", "first"}));
  CHECK(parsed[2] == nlohmann::json::array({"x-trace", "second"}));
}

TEST_CASE_FIXTURE(Fixture, "no headers are stored as an empty array") {
  InboundEvent e = sampleEvent();
  e.headers.clear();
  const IngestOutcome out = ingestOk(e, {});
  CHECK(raw().execAndGet("SELECT headers FROM events WHERE id = " + sqlText(out.eventId))
            .getString() == "[]");
}

TEST_CASE_FIXTURE(Fixture, "a header value that is not UTF-8 does not make ingest fail") {
  InboundEvent e = sampleEvent();
  e.headers = {{"X-Raw", std::string("caf\xe9", 4)}, {"X-Next", "ok"}};
  const IngestOutcome out = ingestOk(e, {"t1"});
  const auto parsed = nlohmann::json::parse(
      raw().execAndGet("SELECT headers FROM events WHERE id = " + sqlText(out.eventId))
          .getString());
  REQUIRE(parsed.size() == 2);
  CHECK(parsed[0][0] == "X-Raw");
  CHECK(parsed[1] == nlohmann::json::array({"X-Next", "ok"}));
  CHECK(count("SELECT COUNT(*) FROM deliveries") == 1);
}

TEST_CASE_FIXTURE(Fixture, "an empty body is stored as an empty blob, not NULL") {
  InboundEvent e = sampleEvent();
  e.body.clear();
  const IngestOutcome out = ingestOk(e, {});
  SQLite::Database r = raw();
  SQLite::Statement q(r, "SELECT body IS NULL, length(body), body_size FROM events WHERE id = ?");
  q.bind(1, out.eventId);
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getInt() == 0);
  CHECK(q.getColumn(1).getInt() == 0);
  CHECK(q.getColumn(2).getInt() == 0);
}

TEST_CASE_FIXTURE(Fixture, "a text body is readable with CAST(body AS TEXT)") {
  InboundEvent e = sampleEvent();
  e.contentType = "application/json";
  e.body = R"({"order":42,"note":"h\u00e9"})";
  const IngestOutcome out = ingestOk(e, {});
  CHECK(raw().execAndGet("SELECT CAST(body AS TEXT) FROM events WHERE id = " +
                         sqlText(out.eventId))
            .getString() == e.body);
}

TEST_CASE_FIXTURE(Fixture, "ingest creates one pending delivery per target id") {
  const std::vector<std::string> targets = {webhooker::newUuid(), webhooker::newUuid(),
                                            webhooker::newUuid()};
  const IngestOutcome out = ingestOk(sampleEvent(), targets);
  REQUIRE(out.deliveries.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(out.deliveries[i].targetId == targets[i]);
    CHECK(webhooker::isUuid(out.deliveries[i].id));
  }

  SQLite::Database r = raw();
  SQLite::Statement q(r,
                      "SELECT id, event_id, target_id, status, attempts, next_attempt_at, "
                      "last_status_code, failure_reason, created_at, updated_at "
                      "FROM deliveries ORDER BY rowid");
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    REQUIRE(q.executeStep());
    CHECK(q.getColumn(0).getString() == out.deliveries[i].id);
    CHECK(q.getColumn(1).getString() == out.eventId);
    CHECK(q.getColumn(2).getString() == targets[i]);
    CHECK(q.getColumn(3).getString() == "pending");
    CHECK(q.getColumn(4).getInt() == 0);
    CHECK(q.getColumn(5).isNull());
    CHECK(q.getColumn(6).isNull());
    CHECK(q.getColumn(7).isNull());
    CHECK(q.getColumn(8).getString() == kStart);
    CHECK(q.getColumn(9).getString() == kStart);
  }
  CHECK_FALSE(q.executeStep());
  CHECK(count("SELECT COUNT(DISTINCT id) FROM deliveries") == 3);
}

TEST_CASE_FIXTURE(Fixture, "unfinished deliveries of a target read page by page, each once, in order") {
  // One clock time for all: the order within it is the rowid.
  const std::string a = webhooker::newUuid();
  const std::string b = webhooker::newUuid();
  std::vector<std::string> expected;
  for (int i = 0; i < 7; ++i) expected.push_back(ingestOk(sampleEvent(), {a, b}).deliveries.at(0).id);

  std::vector<std::string> paged;
  webhooker::DeliveryPosition cursor;
  int pages = 0;
  while (true) {
    auto page = db->unfinishedDeliveries(&a, 3, &cursor);
    REQUIRE(page);
    ++pages;
    for (const auto& d : page.value()) {
      CHECK(d.targetId == a);
      paged.push_back(d.id);
    }
    if (page->size() < 3) break;
  }
  CHECK(pages == 3);
  CHECK(paged == expected);
}

TEST_CASE_FIXTURE(Fixture, "a file nobody holds open is read alone, its WAL included, and left as it was") {
  const std::string a = webhooker::newUuid();
  const std::string b = webhooker::newUuid();
  for (int i = 0; i < 5; ++i) ingestOk(sampleEvent(), {a, b});
  webhooker::AttemptRecord retry;
  retry.deliveryId = ingestOk(sampleEvent(), {a}).deliveries.at(0).id;
  retry.statusCode = 503;
  retry.newStatus = webhooker::DeliveryStatus::kRetrying;
  retry.nextAttemptAt = clock.now() + 1h;
  REQUIRE(db->recordAttempt(retry));
  // c's only delivery retries too: once its time has come, it is c's oldest due.
  const std::string c = webhooker::newUuid();
  retry.deliveryId = ingestOk(sampleEvent(), {c}).deliveries.at(0).id;
  REQUIRE(db->recordAttempt(retry));
  clock.advance(2h);
  const auto expected = db->unfinishedDeliveries();
  REQUIRE(expected);
  REQUIRE(expected->size() == 12);
  const auto expectedBacklog = db->backlogByTarget();
  REQUIRE(expectedBacklog);
  REQUIRE(expectedBacklog->size() == 4);  // a and b pending, a and c retrying
  CHECK_FALSE(EventsDb::unfinishedOfFileAlone(file, clock.now()));  // held open by `db`

  db.reset();  // closed without a checkpoint, as a kill -9 leaves it: the rows are in the WAL
  const std::filesystem::path wal = file.string() + "-wal";
  const std::filesystem::path shm = file.string() + "-shm";
  const auto walSize = std::filesystem::file_size(wal);
  REQUIRE(walSize > 0);
  const auto shmWritten = std::filesystem::last_write_time(shm);
  const auto read = EventsDb::unfinishedOfFileAlone(file, clock.now());
  REQUIRE(read);
  const auto& alone = read->rows;
  REQUIRE(alone.size() == expected->size());
  for (size_t i = 0; i < alone.size(); ++i) {
    const webhooker::UnfinishedDelivery& got = alone.at(i);
    const webhooker::UnfinishedDelivery& want = expected->at(i);
    CHECK(got.id == want.id);
    CHECK(got.eventId == want.eventId);
    CHECK(got.targetId == want.targetId);
    CHECK(got.status == want.status);
    CHECK(got.attempts == want.attempts);
    CHECK(got.nextAttemptAt == want.nextAttemptAt);
    CHECK(got.lastAttemptAt == want.lastAttemptAt);
  }
  CHECK(alone.back().status == webhooker::DeliveryStatus::kRetrying);
  CHECK(alone.back().lastAttemptAt);
  // Counted as the open DB counts them.
  const auto byGroup = [](std::vector<EventsDb::BacklogCount> counts) {
    std::vector<std::tuple<std::string, webhooker::DeliveryStatus, int64_t,
                           std::optional<webhooker::TimePoint>>>
        out;
    for (const auto& group : counts)
      out.emplace_back(group.targetId, group.status, group.count, group.oldestDueCreatedAt);
    std::sort(out.begin(), out.end());
    return out;
  };
  CHECK(byGroup(read->backlog) == byGroup(expectedBacklog.value()));
  CHECK_FALSE(EventsDb::unfinishedOfFileAlone(file, clock.now(), 11));  // more wait than that
  CHECK(EventsDb::unfinishedOfFileAlone(file, clock.now(), 12)->rows.size() == 12);
  // No checkpoint, and the shared WAL index (-shm) untouched: an open that
  // set it up would have truncated it.
  CHECK(std::filesystem::file_size(wal) == walSize);
  CHECK(std::filesystem::last_write_time(shm) == shmWritten);
  CHECK(count("SELECT COUNT(*) FROM deliveries WHERE status IN ('pending', 'retrying')") == 12);

  // A missing file is neither read nor created.
  const std::filesystem::path missing = dir / "events-0d9d1c3e-8c6a-4f5e-9a55-1c2d3e4f5a6b.db";
  CHECK_FALSE(EventsDb::unfinishedOfFileAlone(missing, clock.now()));
  CHECK_FALSE(std::filesystem::exists(missing));
}

TEST_CASE_FIXTURE(Fixture, "a file with an empty WAL or none is read alone with none made, and not written") {
  const std::string target = webhooker::newUuid();
  for (int i = 0; i < 3; ++i) ingestOk(sampleEvent(), {target});
  REQUIRE(db->checkpointWal(EventsDb::Wait::kForOthers).value());
  db.reset();
  const std::filesystem::path wal = file.string() + "-wal";
  const std::filesystem::path shm = file.string() + "-shm";
  // The empty WAL and the -shm the writer left stay as they are: the
  // pool's next open of the file finds them rather than making them again.
  REQUIRE(std::filesystem::file_size(wal) == 0);
  const auto walWritten = std::filesystem::last_write_time(wal);
  const auto shmWritten = std::filesystem::last_write_time(shm);
  REQUIRE(EventsDb::unfinishedOfFileAlone(file, clock.now())->rows.size() == 3);
  REQUIRE(std::filesystem::exists(wal));
  CHECK(std::filesystem::file_size(wal) == 0);
  CHECK(std::filesystem::last_write_time(wal) == walWritten);
  CHECK(std::filesystem::last_write_time(shm) == shmWritten);

  // A file with no WAL (a copy of the file alone) gets none.
  REQUIRE(std::filesystem::remove(wal));
  REQUIRE(EventsDb::unfinishedOfFileAlone(file, clock.now())->rows.size() == 3);
  REQUIRE_FALSE(std::filesystem::exists(wal));

  auto alone = webhooker::storage::openAlone(file);
  REQUIRE(alone);
  SQLite::Database& connection = *alone.value();
  CHECK(connection.execAndGet("SELECT COUNT(*) FROM deliveries").getInt() == 3);
  CHECK_FALSE(std::filesystem::exists(wal));  // read with an empty WAL in memory
  // Reads only: a write fails, and nothing of it reaches the file.
  CHECK_THROWS(connection.exec("DELETE FROM deliveries"));
  CHECK_FALSE(std::filesystem::exists(wal));
  alone.value().reset();
  CHECK_FALSE(std::filesystem::exists(wal));
  CHECK(count("SELECT COUNT(*) FROM deliveries") == 3);
  // A writer opens it as ever, its WAL made on disk.
  db = openDb();
  ingestOk(sampleEvent(), {target});
  CHECK(std::filesystem::file_size(wal) > 0);
  CHECK(count("SELECT COUNT(*) FROM deliveries") == 4);
}

TEST_CASE_FIXTURE(Fixture, "a stale -shm is reset in place by the next open, not trusted") {
  const std::string target = webhooker::newUuid();
  for (int i = 0; i < 3; ++i) ingestOk(sampleEvent(), {target});
  const std::filesystem::path shm = file.string() + "-shm";
  // The WAL index while the WAL holds the three events' frames.
  const std::string stale = [&] {
    std::ifstream in(shm, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  REQUIRE(stale.size() >= 32768);
  // Emptied into the file: the WAL has no frames now, and the stale index
  // names frames that are not there.
  REQUIRE(db->checkpointWal(EventsDb::Wait::kForOthers).value());
  db.reset();
  REQUIRE(std::filesystem::file_size(file.string() + "-wal") == 0);
  {
    std::ofstream out(shm, std::ios::binary | std::ios::trunc);
    out.write(stale.data(), static_cast<std::streamsize>(stale.size()));
    REQUIRE(out.good());
  }
  const uint64_t before = webhooker::storage::shmResetsInPlaceSoFar();
  db = openDb();
  // Zeroed where it is, not truncated and grown again.
  CHECK(webhooker::storage::shmResetsInPlaceSoFar() == before + 1);
  CHECK(std::filesystem::file_size(shm) == stale.size());
  CHECK(count("SELECT COUNT(*) FROM deliveries") == 3);
  ingestOk(sampleEvent(), {target});
  CHECK(count("SELECT COUNT(*) FROM deliveries") == 4);
  db.reset();
  db = openDb();
  CHECK(count("SELECT COUNT(*) FROM events") == 4);
  CHECK(raw().execAndGet("PRAGMA integrity_check").getString() == "ok");
}

TEST_CASE_FIXTURE(Fixture,
                  "a count on the writer of a file with nothing waiting prepares no scan") {
  ingestOk(sampleEvent(), {});  // an event with no target: nothing waits
  const uint64_t prepared = webhooker::storage::StatementCache::preparedSoFar();
  auto counted = db->backlogOnWriter();
  REQUIRE(counted);
  CHECK(counted->empty());
  // One small statement, not the scan's two: the connection is about to close.
  CHECK(webhooker::storage::StatementCache::preparedSoFar() == prepared + 1);

  // Something waits: counted as ever, the same as on a connection of its own.
  const std::string target = webhooker::newUuid();
  ingestOk(sampleEvent(), {target});
  counted = db->backlogOnWriter();
  REQUIRE(counted);
  REQUIRE(counted->size() == 1);
  CHECK(counted->front().targetId == target);
  CHECK(counted->front().count == 1);
  CHECK(counted->front().oldestDueCreatedAt);
  const auto separately = db->backlogByTarget();
  REQUIRE(separately);
  REQUIRE(separately->size() == 1);
  CHECK(separately->front().oldestDueCreatedAt == counted->front().oldestDueCreatedAt);
}

TEST_CASE_FIXTURE(Fixture, "the backlog is counted exactly across chunks, per target and status") {
  // More waiting rows of one target than the count reads per chunk (1,000):
  // the chunks meet inside a target without losing or repeating a row.
  const std::string a = webhooker::newUuid();
  const std::string b = webhooker::newUuid();
  const webhooker::TimePoint oldest = clock.now();
  const IngestOutcome first = ingestOk(sampleEvent(), {a, b});
  clock.advance(1s);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 600;
  ingestConcurrently(kThreads, kPerThread, a);
  // b's delivery waits for a retry that is not due yet.
  webhooker::AttemptRecord retry;
  retry.deliveryId = first.deliveries.at(1).id;
  retry.statusCode = 503;
  retry.newStatus = webhooker::DeliveryStatus::kRetrying;
  retry.nextAttemptAt = clock.now() + 1h;
  REQUIRE(db->recordAttempt(retry));

  const auto check = [&](const webhooker::Result<std::vector<EventsDb::BacklogCount>>& counted) {
    REQUIRE(counted);
    REQUIRE(counted->size() == 2);
    const EventsDb::BacklogCount& pending = counted->at(0);
    CHECK(pending.targetId == a);
    CHECK(pending.status == webhooker::DeliveryStatus::kPending);
    CHECK(pending.count == 1 + kThreads * kPerThread);
    CHECK(pending.oldestDueCreatedAt == oldest);
    const EventsDb::BacklogCount& retrying = counted->at(1);
    CHECK(retrying.targetId == b);
    CHECK(retrying.status == webhooker::DeliveryStatus::kRetrying);
    CHECK(retrying.count == 1);
    CHECK_FALSE(retrying.oldestDueCreatedAt);
  };
  check(db->backlogByTarget());
  check(EventsDb::backlogOfFile(file, clock.now()));
}

TEST_CASE_FIXTURE(Fixture,
                  "a target's oldest due delivery is found behind a chunk waiting for later") {
  // More deliveries wait for a later time than the search reads per chunk
  // (1,000), all older than the one that is due: the search goes on past
  // the chunk, and counts what it finds on the group of its status.
  const std::string a = webhooker::newUuid();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 251;
  ingestConcurrently(kThreads, kPerThread, a);
  const std::string later = webhooker::formatTime(clock.now() + 1h);
  {
    SQLite::Database writer(file.string(), SQLite::OPEN_READWRITE);
    writer.exec("UPDATE deliveries SET next_attempt_at = '" + later + "'");
  }
  clock.advance(1s);
  const webhooker::TimePoint due = clock.now();
  const IngestOutcome last = ingestOk(sampleEvent(), {a});
  webhooker::AttemptRecord retry;  // a's other status: its only delivery is due
  retry.deliveryId = last.deliveries.at(0).id;
  retry.statusCode = 503;
  retry.newStatus = webhooker::DeliveryStatus::kRetrying;
  retry.nextAttemptAt = clock.now();
  REQUIRE(db->recordAttempt(retry));

  const auto check = [&](const webhooker::Result<std::vector<EventsDb::BacklogCount>>& counted) {
    REQUIRE(counted);
    REQUIRE(counted->size() == 2);
    CHECK(counted->at(0).status == webhooker::DeliveryStatus::kPending);
    CHECK(counted->at(0).count == kThreads * kPerThread);
    CHECK_FALSE(counted->at(0).oldestDueCreatedAt);
    CHECK(counted->at(1).status == webhooker::DeliveryStatus::kRetrying);
    CHECK(counted->at(1).count == 1);
    CHECK(counted->at(1).oldestDueCreatedAt == due);
  };
  check(db->backlogByTarget());
  check(EventsDb::backlogOfFile(file, clock.now()));
}

TEST_CASE_FIXTURE(Fixture, "an event with no targets has no deliveries") {
  const IngestOutcome out = ingestOk(sampleEvent(), {});
  CHECK(out.deliveries.empty());
  CHECK(count("SELECT COUNT(*) FROM events") == 1);
  CHECK(count("SELECT COUNT(*) FROM deliveries") == 0);
}

TEST_CASE_FIXTURE(Fixture, "events without an idempotency key are never duplicates") {
  const IngestOutcome a = ingestOk(sampleEvent(), {"t"});
  const IngestOutcome b = ingestOk(sampleEvent(), {"t"});
  CHECK_FALSE(b.duplicate);
  CHECK(a.eventId != b.eventId);
  CHECK(count("SELECT COUNT(*) FROM events") == 2);
  CHECK(count("SELECT COUNT(*) FROM deliveries") == 2);
}

TEST_CASE_FIXTURE(Fixture, "the same idempotency key within the window is a duplicate") {
  InboundEvent e = sampleEvent();
  e.idempotencyKey = "evt_123";
  const IngestOutcome first = ingestOk(e, {"t1", "t2"});
  CHECK_FALSE(first.duplicate);
  CHECK(raw().execAndGet("SELECT idempotency_key FROM events").getString() == "evt_123");

  clock.advance(kWindow - 1ms);
  InboundEvent again = e;
  again.body = "a different body";
  auto r = db->ingest(again, {"t1", "t2", "t3"}, kWindow);
  REQUIRE(r.ok());
  CHECK(r->duplicate);
  CHECK(r->eventId == first.eventId);
  CHECK(r->receivedAt == first.receivedAt);
  REQUIRE(r->deliveries.size() == 2);
  CHECK(r->deliveries[0].id == first.deliveries[0].id);
  CHECK(r->deliveries[1].id == first.deliveries[1].id);
  CHECK(r->deliveries[1].targetId == "t2");

  // Nothing new was written.
  CHECK(count("SELECT COUNT(*) FROM events") == 1);
  CHECK(count("SELECT COUNT(*) FROM deliveries") == 2);
  CHECK(count("SELECT COUNT(*) FROM deliveries WHERE target_id = 't3'") == 0);
  CHECK(count("SELECT length(body) FROM events") == static_cast<int>(kBinaryBody.size()));
}

TEST_CASE_FIXTURE(Fixture, "the window includes its end: at exactly 24 h the key still matches") {
  InboundEvent e = sampleEvent();
  e.idempotencyKey = "evt_123";
  const IngestOutcome first = ingestOk(e, {"t1"});
  clock.advance(kWindow);
  auto atTheEnd = db->ingest(e, {"t1"}, kWindow);
  REQUIRE(atTheEnd.ok());
  CHECK(atTheEnd->duplicate);
  CHECK(atTheEnd->eventId == first.eventId);
  clock.advance(1ms);
  auto past = db->ingest(e, {"t1"}, kWindow);
  REQUIRE(past.ok());
  CHECK_FALSE(past->duplicate);
  CHECK(count("SELECT COUNT(*) FROM events") == 2);
}

TEST_CASE_FIXTURE(Fixture, "the same idempotency key after the window is a new event") {
  InboundEvent e = sampleEvent();
  e.idempotencyKey = "evt_123";
  const IngestOutcome first = ingestOk(e, {"t1"});
  clock.advance(kWindow + 1ms);
  auto r = db->ingest(e, {"t1"}, kWindow);
  REQUIRE(r.ok());
  CHECK_FALSE(r->duplicate);
  CHECK(r->eventId != first.eventId);
  CHECK(r->receivedAt == "2026-11-19T11:06:40.001Z");
  CHECK(count("SELECT COUNT(*) FROM events") == 2);
  CHECK(count("SELECT COUNT(*) FROM deliveries") == 2);

  // Now the second event is the one the key points at.
  clock.advance(1h);
  auto third = db->ingest(e, {"t1"}, kWindow);
  REQUIRE(third.ok());
  CHECK(third->duplicate);
  CHECK(third->eventId == r->eventId);
  CHECK(count("SELECT COUNT(*) FROM events") == 2);
}

TEST_CASE_FIXTURE(Fixture, "different idempotency keys are different events") {
  InboundEvent a = sampleEvent();
  a.idempotencyKey = "key-a";
  InboundEvent b = sampleEvent();
  b.idempotencyKey = "key-b";
  const IngestOutcome first = ingestOk(a, {});
  const IngestOutcome second = ingestOk(b, {});
  CHECK_FALSE(second.duplicate);
  CHECK(first.eventId != second.eventId);
  CHECK(count("SELECT COUNT(*) FROM events") == 2);
}

TEST_CASE_FIXTURE(Fixture, "received_at is ISO-8601 UTC with milliseconds from the clock") {
  clock.advance(123ms);
  const IngestOutcome out = ingestOk(sampleEvent(), {"t"});
  CHECK(out.receivedAt == "2026-11-18T11:06:40.123Z");
  CHECK(out.receivedAt == webhooker::formatTime(clock.now()));
  const std::string stored = raw().execAndGet("SELECT received_at FROM events").getString();
  CHECK(stored == out.receivedAt);
  CHECK(matchesWhole(stored, R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)"));
  CHECK(raw().execAndGet("SELECT created_at FROM deliveries").getString() == stored);
}

TEST_CASE_FIXTURE(Fixture, "delivery_history shows one row per delivery with its event") {
  InboundEvent json = sampleEvent();
  json.contentType = "application/json";
  json.body = R"({"order":42})";
  const IngestOutcome withTargets = ingestOk(json, {"t1", "t2"});
  clock.advance(1s);
  const IngestOutcome alone = ingestOk(sampleEvent(), {});

  SQLite::Database r = raw();
  r.exec(std::string(webhooker::deliveryHistoryView()));  // as `webhooker history-view` prints it
  CHECK(r.execAndGet("SELECT COUNT(*) FROM delivery_history").getInt() == 3);

  SQLite::Statement q(r,
                      "SELECT event_id, received_at, method, content_type, body_size, "
                      "body_preview, delivery_id, target_id, status, attempts, last_attempt_at "
                      "FROM delivery_history WHERE event_id = ? ORDER BY target_id");
  q.bind(1, withTargets.eventId);
  for (size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    REQUIRE(q.executeStep());
    CHECK(q.getColumn(0).getString() == withTargets.eventId);
    CHECK(q.getColumn(1).getString() == kStart);
    CHECK(q.getColumn(2).getString() == "POST");
    CHECK(q.getColumn(3).getString() == "application/json");
    CHECK(q.getColumn(4).getInt() == static_cast<int>(json.body.size()));
    CHECK(q.getColumn(5).getString() == json.body);
    CHECK(q.getColumn(6).getString() == withTargets.deliveries[i].id);
    CHECK(q.getColumn(7).getString() == (i == 0 ? "t1" : "t2"));
    CHECK(q.getColumn(8).getString() == "pending");
    CHECK(q.getColumn(9).getInt() == 0);
    CHECK(q.getColumn(10).isNull());
  }
  CHECK_FALSE(q.executeStep());

  // The event without deliveries still has its row, delivery columns NULL,
  // and no preview of a binary body.
  SQLite::Statement lone(r,
                         "SELECT COUNT(*), MAX(delivery_id IS NULL), MAX(status IS NULL), "
                         "MAX(body_preview IS NULL), MAX(body_size) "
                         "FROM delivery_history WHERE event_id = ?");
  lone.bind(1, alone.eventId);
  REQUIRE(lone.executeStep());
  CHECK(lone.getColumn(0).getInt() == 1);
  CHECK(lone.getColumn(1).getInt() == 1);
  CHECK(lone.getColumn(2).getInt() == 1);
  CHECK(lone.getColumn(3).getInt() == 1);
  CHECK(lone.getColumn(4).getInt() == static_cast<int>(kBinaryBody.size()));
}

TEST_CASE_FIXTURE(Fixture, "delivery_history shows the latest attempt of a delivery") {
  const IngestOutcome out = ingestOk(sampleEvent(), {"t1"});
  {
    SQLite::Database w(file.string(), SQLite::OPEN_READWRITE);
    SQLite::Statement add(w,
                          "INSERT INTO delivery_results (delivery_id, attempt, status_code, "
                          "error, duration_ms, success, created_at) VALUES (?, ?, ?, ?, ?, 0, ?)");
    for (int attempt = 1; attempt <= 2; ++attempt) {
      add.bind(1, out.deliveries[0].id);
      add.bind(2, attempt);
      add.bind(3, 500 + attempt);
      add.bind(4, "error " + std::to_string(attempt));
      add.bind(5, 10 * attempt);
      add.bind(6, "2026-11-18T11:06:4" + std::to_string(attempt) + ".000Z");
      add.exec();
      add.reset();
    }
  }
  SQLite::Database r = raw();
  r.exec(std::string(webhooker::deliveryHistoryView()));
  SQLite::Statement q(r, "SELECT last_error, last_duration_ms, last_attempt_at FROM "
                         "delivery_history");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == "error 2");
  CHECK(q.getColumn(1).getInt() == 20);
  CHECK(q.getColumn(2).getString() == "2026-11-18T11:06:42.000Z");
  CHECK_FALSE(q.executeStep());
}

TEST_CASE_FIXTURE(Fixture, "an attempt is recorded only after the one before it") {
  const IngestOutcome out = ingestOk(sampleEvent(), {"t1"});
  webhooker::AttemptRecord first;
  first.deliveryId = out.deliveries[0].id;
  first.attempt = 1;
  first.statusCode = 503;
  first.newStatus = webhooker::DeliveryStatus::kRetrying;
  REQUIRE(db->recordAttempt(first));

  // A second copy of attempt 1, and an attempt 3 that skips 2: refused,
  // nothing written.
  webhooker::AttemptRecord again = first;
  again.statusCode = 200;
  again.success = true;
  again.newStatus = webhooker::DeliveryStatus::kDelivered;
  for (int number : {1, 3}) {
    CAPTURE(number);
    again.attempt = number;
    const auto refused = db->recordAttempt(again);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == "conflict");
  }
  CHECK(count("SELECT COUNT(*) FROM delivery_results") == 1);
  CHECK(count("SELECT attempts FROM deliveries") == 1);
  CHECK(count("SELECT status = 'retrying' FROM deliveries") == 1);

  again.attempt = 2;
  REQUIRE(db->recordAttempt(again));
  CHECK(count("SELECT COUNT(*) FROM delivery_results") == 2);
  CHECK(count("SELECT status = 'delivered' AND attempts = 2 FROM deliveries") == 1);

  again.deliveryId = "no-such-delivery";
  again.attempt = 1;
  const auto gone = db->recordAttempt(again);
  REQUIRE_FALSE(gone);
  CHECK(gone.error().code == "not_found");
}

TEST_CASE_FIXTURE(Fixture, "an events DB holds no target table and no config column") {
  InboundEvent e = sampleEvent();
  e.idempotencyKey = "k";
  ingestOk(e, {"t1", "t2"});
  SQLite::Database r = raw();
  CHECK(r.execAndGet("SELECT COUNT(*) FROM sqlite_master WHERE name LIKE '%target%' AND "
                     "type IN ('table', 'view') AND name != 'delivery_history'")
            .getInt() == 0);
  CHECK_FALSE(r.tableExists("targets"));

  std::vector<std::string> tables;
  SQLite::Statement t(r, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')");
  while (t.executeStep()) tables.push_back(t.getColumn(0).getString());
  REQUIRE(tables.size() >= 4);
  for (const std::string& table : tables) {
    CAPTURE(table);
    SQLite::Statement cols(r, "SELECT name FROM pragma_table_info(?)");
    cols.bind(1, table);
    int columns = 0;
    while (cols.executeStep()) {
      ++columns;
      const std::string col = cols.getColumn(0).getString();
      CAPTURE(col);
      CHECK(col.find("config") == std::string::npos);
      CHECK(col.find("secret") == std::string::npos);
      CHECK(col.find("url") == std::string::npos);
    }
    CHECK(columns > 0);
  }
}

// How many descriptors this process holds on `file` itself (not its -wal or
// -shm): one per SQLite connection open on it.
static size_t connectionsOn(const std::filesystem::path& file) {
  const std::filesystem::path wanted = std::filesystem::canonical(file);
  size_t n = 0;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(fd.path(), ec) == wanted && !ec) ++n;
  }
  return n;
}

TEST_CASE_FIXTURE(Fixture, "a quiet file's payload is read on its writing connection: none more opens") {
  const IngestOutcome stored = ingestOk(sampleEvent(), {"t1"});
  REQUIRE(connectionsOn(file) == 1);

  for (int i = 0; i < 3; ++i) {
    auto payload = db->loadPayload(stored.eventId);
    REQUIRE(payload.ok());
    CHECK(payload->body == kBinaryBody);
    CHECK(payload->method == "POST");
    CHECK(payload->contentType == "application/octet-stream");
    CHECK(payload->headers.size() == 4);
  }
  CHECK(connectionsOn(file) == 1);  // the writer's; no reader was opened for the reads
  auto gone = db->loadPayload("00000000-0000-0000-0000-000000000000");
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().code == webhooker::error_code::kNotFound);
}

TEST_CASE_FIXTURE(Fixture,
                  "the backlog questions to a file with nothing waiting open no connection") {
  ingestOk(sampleEvent(), {});  // no target
  const IngestOutcome done = ingestOk(sampleEvent(), {"t1"});
  webhooker::AttemptRecord delivered;
  delivered.deliveryId = done.deliveries.at(0).id;
  delivered.statusCode = 200;
  delivered.newStatus = webhooker::DeliveryStatus::kDelivered;
  REQUIRE(db->recordAttempt(delivered));
  REQUIRE(connectionsOn(file) == 1);

  // The sampler's count and the sweep's walk, as on a node's quiet files.
  for (int i = 0; i < 3; ++i) {
    auto counted = db->backlogByTarget();
    REQUIRE(counted);
    CHECK(counted->empty());
    auto next = db->nextWaitingTarget("");
    REQUIRE(next);
    CHECK_FALSE(next.value());
  }
  CHECK(connectionsOn(file) == 1);  // the writer's only

  // Once something waits both read it on their scan connection.
  ingestOk(sampleEvent(), {"t2"});
  auto counted = db->backlogByTarget();
  REQUIRE(counted);
  REQUIRE(counted->size() == 1);
  CHECK(counted->front().targetId == "t2");
  CHECK(counted->front().count == 1);
  auto next = db->nextWaitingTarget("");
  REQUIRE(next);
  CHECK(next.value() == std::optional<std::string>("t2"));
  CHECK(connectionsOn(file) == 2);
}

TEST_CASE_FIXTURE(Fixture, "payload reads wait for a quiet file's result commits, not for long ones") {
  ingestConcurrently(8, 150, "t1");
  auto waiting = db->unfinishedDeliveries();
  REQUIRE(waiting.ok());
  std::vector<webhooker::UnfinishedDelivery> events = waiting.value();
  REQUIRE(events.size() == 1200);
  std::atomic<int> answered{0};
  std::atomic<int> failed{0};
  // Results of events [from, to) submitted `batch` at a time (they commit in
  // groups of that size), with payloads read while each batch commits, the
  // way workers read between attempts.
  const auto resultsWithReads = [&](size_t from, size_t to, size_t batch) {
    for (size_t first = from; first < to; first += batch) {
      for (size_t i = first; i < first + batch; ++i) {
        webhooker::AttemptRecord result;
        result.deliveryId = events[i].id;
        result.statusCode = 200;
        result.success = true;
        db->recordAttemptAsync(result, [&](webhooker::Result<void> r) {
          if (!r) ++failed;
          ++answered;
        });
      }
      while (answered.load() < static_cast<int>(first + batch)) {
        auto payload = db->loadPayload(events[first].eventId);
        REQUIRE(payload.ok());
        REQUIRE(payload->body == kBinaryBody);
      }
    }
  };
  const size_t opened = connectionsOn(file);  // the writer's, and the scan's that read them

  // A quiet file's groups of results (fewer than 8, buffered: no flush): a
  // read waits for them rather than open and parse a second connection.
  resultsWithReads(0, 600, 4);
  CHECK(connectionsOn(file) == opened);

  // A busy file's groups: reads beside them go to a reader of their own.
  // On busy cores a batch of 40 may still commit in groups under 8, so
  // batches go on (over fresh events once these are used) until a read has
  // met a long group.
  size_t next = 600;
  const bool readerForBusyFile = webhooker::testing::eventually([&] {
    if (next == events.size()) {
      ingestConcurrently(8, 5, "t1");
      auto fresh = db->unfinishedDeliveries();
      REQUIRE(fresh.ok());
      REQUIRE(fresh->size() == 40);
      events.insert(events.end(), fresh->begin(), fresh->end());
    }
    resultsWithReads(next, next + 40, 40);
    next += 40;
    return connectionsOn(file) == opened + 1;
  });
  CHECK(failed.load() == 0);
  CHECK(readerForBusyFile);

  // Ingests commit with a flush (synchronous=FULL): a read beside them opens
  // the reader rather than wait for the disk.
  db.reset();
  db = openDb();
  const size_t reopened = connectionsOn(file);
  std::atomic<bool> ingesting{true};
  std::thread writer([&] {
    while (ingesting.load()) (void)db->ingest(sampleEvent(), {"t1"}, kWindow);
  });
  const bool readerOpened = webhooker::testing::eventually([&] {
    for (int i = 0; i < 50; ++i) REQUIRE(db->loadPayload(events[0].eventId).ok());
    return connectionsOn(file) == reopened + 1;
  });
  ingesting = false;
  writer.join();
  CHECK(readerOpened);
}

TEST_CASE_FIXTURE(Fixture, "stored events survive closing and reopening the file") {
  InboundEvent e = sampleEvent();
  e.idempotencyKey = "persist";
  const IngestOutcome first = ingestOk(e, {"t1"});
  db.reset();
  db = openDb();
  auto again = db->ingest(e, {"t1"}, kWindow);
  REQUIRE(again.ok());
  CHECK(again->duplicate);
  CHECK(again->eventId == first.eventId);
  SQLite::Database r = raw();
  SQLite::Statement q(r, "SELECT body FROM events");
  REQUIRE(q.executeStep());
  CHECK(std::string(static_cast<const char*>(q.getColumn(0).getBlob()),
                    static_cast<size_t>(q.getColumn(0).getBytes())) == kBinaryBody);
}

TEST_CASE_FIXTURE(Fixture, "concurrent ingests on one EventsDb all land") {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        InboundEvent e = sampleEvent();
        e.idempotencyKey = "k-" + std::to_string(t) + "-" + std::to_string(i);
        if (!db->ingest(e, {"t1"}, kWindow)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
  CHECK(count("SELECT COUNT(*) FROM events") == kThreads * kPerThread);
  CHECK(count("SELECT COUNT(*) FROM deliveries") == kThreads * kPerThread);
}

TEST_CASE_FIXTURE(Fixture, "two EventsDb on one file ingest with idempotency keys at once") {
  // What happens when the pool evicts a DB someone still holds and the next
  // get opens a second connection to the same file (or an operator writes
  // with the sqlite3 CLI).
  // BUG: storage/events_db.cpp ingest() opens a DEFERRED transaction and reads
  // (idempotency SELECT) before it writes; when another connection commits in
  // between, the lock upgrade fails at once with SQLITE_BUSY ("database is
  // locked") instead of waiting busy_timeout: ingest answers storage_busy (503).
  // Fix: SQLite::Transaction txn(*db_, SQLite::TransactionBehavior::IMMEDIATE).
  auto second = EventsDb::open(file, DbOptions{}, clock);
  REQUIRE(second.ok());
  constexpr int kPerThread = 100;
  std::atomic<int> failures{0};
  std::string firstError;
  std::mutex errorMutex;
  auto run = [&](std::shared_ptr<EventsDb> target, const std::string& prefix) {
    for (int i = 0; i < kPerThread; ++i) {
      InboundEvent e = sampleEvent();
      e.idempotencyKey = prefix + std::to_string(i);
      auto r = target->ingest(e, {"t1"}, kWindow);
      if (!r) {
        ++failures;
        std::lock_guard lock(errorMutex);
        if (firstError.empty()) firstError = r.error().code + ": " + r.error().message;
      }
    }
  };
  std::thread a(run, db, "a-");
  std::thread b(run, second.value(), "b-");
  a.join();
  b.join();
  INFO("first error: " << firstError);
  CHECK(failures.load() == 0);
  CHECK(count("SELECT COUNT(*) FROM events") == 2 * kPerThread - failures.load());
}
