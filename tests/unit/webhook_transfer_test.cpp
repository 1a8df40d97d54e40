// The move of a webhook's events DB in pieces (storage/webhook_transfer.h),
// on real files: a catch-up piece brings the source's later state of a
// delivery into the copy, also when that state was written within the same
// millisecond as the one the copy has; an earlier state never replaces a
// later one; an adopted copy never reads a WAL left under its new name; a
// webhook with no events file reads as an empty piece and is not made one,
// nor is one deleted as its piece is read; a piece merged into a webhook's
// events DB is written on the pool's connection.
#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/time_format.h"
#include "storage/events_db.h"
#include "storage/events_db_pool.h"
#include "storage/webhook_transfer.h"
#include "tests/support/db_file.h"
#include "tests/support/eventually.h"

namespace {

using webhooker::DbOptions;
using webhooker::DeliveryMerge;
using webhooker::EventsDb;
using webhooker::TransferCursor;
using webhooker::testing::DbFile;

constexpr size_t kBudget = 1 << 20;

webhooker::InboundEvent anEvent(const std::string& body) {
  webhooker::InboundEvent event;
  event.entrypointId = "8b0e4a7e-2f4c-4d7b-9a55-1c2d3e4f5a6b";
  event.method = "POST";
  event.path = "/hooks/8b0e4a7e-2f4c-4d7b-9a55-1c2d3e4f5a6b";
  event.body = body;
  return event;
}

// A source events DB with one event for target t1, and the file its copy
// is merged into, both on one fake clock that stands still.
struct Transfer : DbFile {
  std::shared_ptr<EventsDb> source;
  std::filesystem::path copy = dir / "events-copy.db";
  std::string deliveryId;

  Transfer() : DbFile("events-source.db") {
    source = EventsDb::open(file, DbOptions{}, clock).value();
    deliveryId =
        source->ingest(anEvent("{}"), {"t1"}, std::chrono::hours(24)).value().deliveries.at(0).id;
  }

  // A piece of the source from the start (a catch-up when `changedSince`
  // is set), as a move reads it.
  std::string readPiece(std::optional<std::string> changedSince = std::nullopt) {
    const std::string now = webhooker::formatTime(clock.now());
    auto piece = webhooker::readTransferPiece(file, dir.path(), TransferCursor{0, changedSince},
                                              kBudget, DbOptions{}, now);
    REQUIRE(piece);
    return piece->bytes;
  }
  void merge(const std::string& piece) {
    REQUIRE(webhooker::mergeTransferPiece(copy, dir.path(), piece, DeliveryMerge::kNewerWins,
                                          DbOptions{}));
  }

  std::string copiedState() {
    SQLite::Database db(copy.string(), SQLite::OPEN_READONLY);
    SQLite::Statement q(db, "SELECT status || '/' || attempts FROM deliveries WHERE id = ?");
    q.bind(1, deliveryId);
    REQUIRE(q.executeStep());
    return q.getColumn(0).getString();
  }

  void deliver() {
    webhooker::AttemptRecord delivered;
    delivered.deliveryId = deliveryId;
    delivered.attempt = 1;
    delivered.statusCode = 200;
    delivered.success = true;
    delivered.newStatus = webhooker::DeliveryStatus::kDelivered;
    REQUIRE(source->recordAttempt(delivered));
  }
};

}  // namespace

TEST_CASE_FIXTURE(Transfer, "a catch-up brings a delivery's later state, written in the same millisecond") {
  merge(readPiece());
  CHECK(copiedState() == "pending/0");
  deliver();  // the clock has not moved: updated_at is the same as the copy's
  merge(readPiece(webhooker::formatTime(clock.now())));
  CHECK(copiedState() == "delivered/1");
}

TEST_CASE_FIXTURE(Transfer, "an earlier state of a delivery never replaces a later one") {
  const std::string beforeDelivery = readPiece();
  deliver();
  merge(readPiece());
  REQUIRE(copiedState() == "delivered/1");
  merge(beforeDelivery);  // read first, merged last
  CHECK(copiedState() == "delivered/1");
}

TEST_CASE_FIXTURE(Transfer, "an adopted copy is not read through a WAL left under its new name") {
  merge(readPiece());
  // An earlier file under the name, removed without its WAL (a crash
  // between a removal's deletes): three events only in that WAL.
  const std::filesystem::path target = dir / "events-target.db";
  {
    auto earlier = EventsDb::open(target, DbOptions{}, clock).value();
    const webhooker::InboundEvent event = anEvent("{\"earlier\":true}");
    for (int i = 0; i < 3; ++i) REQUIRE(earlier->ingest(event, {"t1"}, std::chrono::hours(24)));
  }
  REQUIRE(std::filesystem::file_size(target.string() + "-wal") > 0);
  std::filesystem::remove(target);

  REQUIRE(webhooker::adoptIncoming(copy, target, DbOptions{}));
  CHECK_FALSE(std::filesystem::exists(copy));
  SQLite::Database db(target.string(), SQLite::OPEN_READONLY);
  CHECK(db.execAndGet("PRAGMA integrity_check").getString() == "ok");
  CHECK(db.execAndGet("SELECT COUNT(*) FROM events").getInt() == 1);
  CHECK(db.execAndGet("SELECT id FROM deliveries").getString() == deliveryId);
}

TEST_CASE_FIXTURE(Transfer, "a webhook with no events file reads as an empty piece, making none") {
  const std::filesystem::path missing = dir / "events-none.db";
  auto piece = webhooker::readTransferPiece(missing, dir.path(), TransferCursor{}, kBudget,
                                            DbOptions{}, webhooker::formatTime(clock.now()));
  REQUIRE(piece);
  CHECK(piece->lastEvent == 0);
  CHECK_FALSE(piece->more);
  CHECK_FALSE(std::filesystem::exists(missing));
  // Only the two DBs of the fixture are left: no scratch file either.
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    CAPTURE(entry.path());
    CHECK(entry.path().filename().string().rfind("events-", 0) == 0);
    ++files;
  }
  CHECK(files > 0);
  // A piece like any other: merged, the copy has no events.
  merge(piece->bytes);
  SQLite::Database db(copy.string(), SQLite::OPEN_READONLY);
  CHECK(db.execAndGet("SELECT COUNT(*) FROM events").getInt() == 0);
}

TEST_CASE_FIXTURE(Transfer, "a piece read of a file deleted as the read begins makes no file") {
  // The file of a webhook deleted while its piece is read (the admin DELETE
  // is refused only once the move is under way): removed at about the
  // moment the read looks for it, again and again so that some removals
  // fall between the read's look and its open.
  const std::filesystem::path made = dir / "made.db";
  REQUIRE(EventsDb::create(made, DbOptions{}));
  const std::filesystem::path deleted = dir / "events-deleted.db";
  for (int i = 0; i < 300; ++i) {
    std::filesystem::copy_file(made, deleted);
    std::atomic<bool> go{false};
    std::thread remover([&] {
      while (!go) std::this_thread::yield();
      std::filesystem::remove(deleted);
    });
    go = true;
    // Either answer is right (the file as it was, or no events); making a file is not.
    (void)webhooker::readTransferPiece(deleted, dir.path(), TransferCursor{}, kBudget, DbOptions{},
                                       webhooker::formatTime(clock.now()));
    remover.join();
    REQUIRE_MESSAGE(!std::filesystem::exists(deleted), "made again by read " << i);
  }
}

TEST_CASE_FIXTURE(Transfer,
                  "a piece merged into a webhook's events DB is written as the pool "
                  "writes: one writer, the pool's view kept, no file for a removed id") {
  const std::string piece = readPiece();  // the event of t1, pending
  webhooker::EventsDbPool pool(dir.path(), DbOptions{}, clock);
  const auto merge = [&](const std::string& webhookId) {
    return webhooker::mergeTransferPiece(pool, webhookId, piece, DeliveryMerge::kAddMissing);
  };
  const auto eventsIn = [&](const std::string& webhookId) {
    SQLite::Database db(pool.pathFor(webhookId).string(), SQLite::OPEN_READONLY);
    CHECK(db.execAndGet("PRAGMA integrity_check").getString() == "ok");
    return db.execAndGet("SELECT COUNT(*) FROM events").getInt();
  };

  SUBCASE("into a file the pool holds open while events arrive") {
    auto held = pool.get("held").value();
    std::thread ingest([&] {
      for (int i = 0; i < 20; ++i)
        CHECK(held->ingest(anEvent("{}"), {"t2"}, std::chrono::hours(24)));
    });
    REQUIRE(merge("held"));
    ingest.join();
    CHECK(eventsIn("held") == 21);
    CHECK(pool.peek("held").open == held);
  }

  SUBCASE("into a file the pool closed and counted the backlog of") {
    REQUIRE(pool.get("closed").value()->ingest(anEvent("{}"), {"t2"}, std::chrono::hours(24)));
    pool.letGo("closed");
    REQUIRE(webhooker::testing::eventually([&] { return pool.peek("closed").closedBacklog; }));
    REQUIRE(merge("closed"));
    // What the backlog sampler is told has the merged delivery of t1.
    const auto peek = pool.peek("closed");
    std::vector<EventsDb::BacklogCount> backlog;
    if (peek.open)
      backlog = peek.open->backlogByTarget().value();
    else if (peek.closedBacklog)
      backlog = *peek.closedBacklog;
    int64_t t1 = 0;
    for (const auto& count : backlog)
      if (count.targetId == "t1") t1 += count.count;
    CHECK(t1 == 1);
  }

  SUBCASE("into a webhook with no file yet: the pool makes it, as a first write") {
    REQUIRE(merge("new"));
    CHECK(eventsIn("new") == 1);
    CHECK(pool.peek("new").open != nullptr);
    CHECK_FALSE(std::filesystem::exists(pool.pathFor("new").string() + EventsDb::kWritingSuffix));
  }

  SUBCASE("refused for a webhook the pool removed, making no file") {
    REQUIRE(pool.get("gone"));
    REQUIRE(pool.remove("gone"));
    const auto merged = merge("gone");
    REQUIRE_FALSE(merged);
    CHECK(merged.error().isNotFound());
    CHECK_FALSE(std::filesystem::exists(pool.pathFor("gone")));
  }
}
