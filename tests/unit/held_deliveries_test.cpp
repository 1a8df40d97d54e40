// HeldDeliveries: what the engine holds is held once; a retry asked for by
// a running attempt keeps the delivery held past that attempt; a reconcile
// skips what was released after it opened, and the numbering goes once no
// reconcile needs it.
#include <doctest/doctest.h>

#include <cstdint>

#include "engine/held_deliveries.h"

namespace {

using webhooker::HeldDeliveries;

TEST_CASE("a delivery is held once until its attempt finishes") {
  HeldDeliveries held;
  CHECK(held.hold("d"));
  CHECK_FALSE(held.hold("d"));
  CHECK(held.holds("d"));
  CHECK(held.size() == 1);
  CHECK(held.attemptFinished("d"));
  CHECK_FALSE(held.holds("d"));
  CHECK(held.hold("d"));
}

TEST_CASE("a retry asked for by a running attempt keeps the delivery held past that attempt") {
  HeldDeliveries held;
  REQUIRE(held.hold("d"));
  held.holdForRetry("d");
  CHECK_FALSE(held.attemptFinished("d"));  // the retry holds it
  CHECK(held.holds("d"));
  CHECK(held.attemptFinished("d"));  // the retry's own attempt
  CHECK_FALSE(held.holds("d"));
}

TEST_CASE("a retry the timer lets go of leaves memory only once its attempt has ended") {
  HeldDeliveries held;
  REQUIRE(held.hold("d"));
  held.holdForRetry("d");
  CHECK_FALSE(held.letGoOfRetry("d"));  // the attempt that asked still runs
  CHECK(held.holds("d"));
  CHECK(held.attemptFinished("d"));
  CHECK_FALSE(held.holds("d"));

  REQUIRE(held.hold("e"));
  held.holdForRetry("e");
  CHECK_FALSE(held.attemptFinished("e"));  // the retry waits in the timer
  CHECK(held.letGoOfRetry("e"));           // and is let go: it waits on disk
  CHECK_FALSE(held.holds("e"));
}

TEST_CASE("a reconcile skips what was released after it opened, not what was released before") {
  HeldDeliveries held;
  REQUIRE(held.hold("before"));
  REQUIRE(held.hold("during"));
  const uint64_t early = held.openReconcile();
  CHECK(held.attemptFinished("during"));
  const uint64_t late = held.openReconcile();
  CHECK(held.releasedSince("during", early));
  CHECK_FALSE(held.releasedSince("during", late));
  CHECK_FALSE(held.hold("during", early));  // stale: the early read saw it unfinished
  CHECK(held.hold("during", late));
  CHECK(held.attemptFinished("during"));
  CHECK(held.hold("before", late) == false);  // held: never released
  held.closeReconcile(late);
  held.closeReconcile(early);
  CHECK(held.hold("during", early));  // nothing is numbered once every reconcile closed
}

TEST_CASE("releases are numbered only while a reconcile is open, and forgotten when none needs them") {
  HeldDeliveries held;
  REQUIRE(held.hold("d"));
  CHECK(held.attemptFinished("d"));
  CHECK_FALSE(held.releasedSince("d", 0));  // no reconcile was open: not numbered
  const uint64_t started = held.openReconcile();
  CHECK_FALSE(held.releasedSince("d", started));
  REQUIRE(held.hold("d"));
  CHECK(held.attemptFinished("d"));
  CHECK(held.releasedSince("d", started));
  const uint64_t later = held.openReconcile();
  held.closeReconcile(started);
  CHECK_FALSE(held.releasedSince("d", later));  // released before the open one began: gone
  held.closeReconcile(later);
}

TEST_CASE("a dropped delivery leaves memory without a release number") {
  HeldDeliveries held;
  const uint64_t started = held.openReconcile();
  REQUIRE(held.hold("d"));
  held.drop("d");
  CHECK_FALSE(held.holds("d"));
  CHECK_FALSE(held.releasedSince("d", started));
  held.closeReconcile(started);
}

}  // namespace
