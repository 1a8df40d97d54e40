// LaneScheduler: the rules that decide which delivery runs next, on one
// thread with a fake clock: in-flight limits, the ready queue's order, the
// per-lane and global caps and their low-water refills, token buckets and
// FIFO heads.
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "engine/lane_scheduler.h"
#include "tests/support/fake_clock.h"

namespace {

using namespace std::chrono_literals;
using webhooker::LaneCaps;
using webhooker::LaneScheduler;
using webhooker::LaneSettings;
using webhooker::Refill;
using webhooker::Task;
using webhooker::testing::FakeClock;
using Enqueued = LaneScheduler::Enqueued;

struct RecordedEvents final : LaneScheduler::Events {
  int ready = 0;
  std::vector<webhooker::TargetType> throttledTypes;
  int refills = 0;
  void laneReady() override { ++ready; }
  void laneThrottled(webhooker::TargetType targetType) override {
    throttledTypes.push_back(targetType);
  }
  void refillQueued() override { ++refills; }
};

Task task(const std::string& targetId, const std::string& deliveryId,
          const std::string& webhookId = "wh") {
  Task t;
  t.deliveryId = deliveryId;
  t.targetId = targetId;
  t.webhookId = webhookId;
  return t;
}

LaneSettings settings(int maxConcurrency, std::optional<double> rate = std::nullopt) {
  return {maxConcurrency, webhooker::TargetType::kSlack, rate};
}

struct Fixture {
  explicit Fixture(LaneCaps caps = {}) : scheduler(caps, clock, events) {}
  // Queues `count` tasks named <target>-<n> in `target`'s lane.
  void fill(const std::string& target, int count, const LaneSettings* with = nullptr) {
    for (int i = 0; i < count; ++i)
      REQUIRE(scheduler.enqueue(task(target, target + "-" + std::to_string(i)), with) ==
              Enqueued::kQueued);
  }
  std::vector<std::string> takeAll() {
    std::vector<std::string> taken;
    while (auto t = scheduler.takeNext()) taken.push_back(t->deliveryId);
    return taken;
  }
  std::vector<std::string> refills() {
    std::vector<std::string> keys;
    while (std::optional<Refill> r = scheduler.takeRefill()) keys.push_back(r->key());
    return keys;
  }

  FakeClock clock;
  RecordedEvents events;
  LaneScheduler scheduler;
};

TEST_CASE("a lane runs at most max_concurrency tasks at once, and the next when one ends") {
  Fixture f;
  const LaneSettings two = settings(2);
  f.fill("t", 5, &two);
  CHECK(f.takeAll() == std::vector<std::string>{"t-0", "t-1"});
  CHECK(f.scheduler.inFlight("t") == 2);
  CHECK(f.scheduler.queued() == 3);
  f.scheduler.attemptEnded("t");
  CHECK(f.takeAll() == std::vector<std::string>{"t-2"});
  CHECK(f.scheduler.inFlight("t") == 2);
}

TEST_CASE("ready lanes are served in turn, one task each, so no target waits behind another") {
  Fixture f;
  const LaneSettings one = settings(1);
  f.fill("a", 3, &one);
  f.fill("b", 3, &one);
  CHECK(f.takeAll() == std::vector<std::string>{"a-0", "b-0"});
  f.scheduler.attemptEnded("b");
  f.scheduler.attemptEnded("a");
  CHECK(f.takeAll() == std::vector<std::string>{"b-1", "a-1"});
}

TEST_CASE("a lane listed ready wakes a worker, unless the worker ending an attempt takes it") {
  Fixture f;
  const LaneSettings one = settings(1);
  f.fill("t", 2, &one);
  CHECK(f.events.ready == 1);  // the first task listed the lane; the second found it listed
  REQUIRE(f.scheduler.takeNext());
  CHECK(f.events.ready == 1);  // the lane is full: nothing to wake for
  f.scheduler.attemptEnded("t");
  CHECK(f.events.ready == 1);  // the worker that ended the attempt takes it itself
  CHECK(f.scheduler.hasReady());
}

TEST_CASE("a lane that is idle and empty goes; its settings come back with its next task") {
  Fixture f;
  const LaneSettings one = settings(1);
  f.fill("t", 1, &one);
  REQUIRE(f.scheduler.takeNext());
  CHECK(f.scheduler.laneCount() == 1);
  f.scheduler.attemptEnded("t");
  CHECK(f.scheduler.laneCount() == 0);
  CHECK(f.scheduler.inFlight("t") == 0);
}

TEST_CASE("a full lane refuses a task and is refilled once it drains below a quarter of its cap") {
  Fixture f({.maxQueuedPerTarget = 8, .maxQueued = 1000});
  const LaneSettings one = settings(1);
  f.fill("t", 8, &one);
  CHECK(f.scheduler.enqueue(task("t", "over", "wh-1"), nullptr) == Enqueued::kLaneFull);
  CHECK(f.scheduler.queued("t") == 8);
  for (int i = 0; i < 6; ++i) {  // down to 2, not below 8 / 4
    REQUIRE(f.scheduler.takeNext());
    f.scheduler.attemptEnded("t");
    CHECK_FALSE(f.scheduler.hasRefill());
  }
  REQUIRE(f.scheduler.takeNext());
  CHECK(f.scheduler.queued("t") == 1);
  const std::optional<Refill> refill = f.scheduler.takeRefill();
  REQUIRE(refill);
  CHECK(refill->webhookId == "wh-1");
  CHECK(refill->targetId == "t");
  CHECK(f.events.refills == 1);
}

TEST_CASE("the global cap: a lane at its even share fills half of it, one below it all of it") {
  Fixture f({.maxQueuedPerTarget = 100, .maxQueued = 8});
  const LaneSettings one = settings(1);
  f.fill("slow", 4, &one);  // alone, its share is the whole cap
  CHECK(f.scheduler.enqueue(task("fast", "fast-0"), &one) == Enqueued::kQueued);
  // Two lanes: the share is 4. "slow", at it, may not go past half the cap
  // (4 in all, 5 queued); "fast", below it, may use the whole cap.
  CHECK(f.scheduler.enqueue(task("slow", "slow-4"), nullptr) == Enqueued::kGlobalCapFull);
  f.fill("fast", 3);
  CHECK(f.scheduler.queued() == 8);
  CHECK(f.scheduler.enqueue(task("third", "third-0"), &one) == Enqueued::kGlobalCapFull);
  CHECK(f.scheduler.laneCount() == 2);  // a refused task makes no lane
}

TEST_CASE("a lane the global cap cut off is refilled below a quarter of its share, while there is room") {
  Fixture f({.maxQueuedPerTarget = 100, .maxQueued = 16});
  const LaneSettings one = settings(1);
  f.fill("slow", 8, &one);
  f.fill("fast", 8, &one);
  CHECK(f.scheduler.enqueue(task("fast", "fast-8", "wh-fast"), nullptr) ==
        Enqueued::kGlobalCapFull);
  // The slow lane's attempt never ends; the fast one drains. Its share is
  // 16 / 2 = 8, a quarter of it 2.
  REQUIRE(f.takeAll() == std::vector<std::string>{"slow-0", "fast-0"});
  for (int i = 0; i < 5; ++i) {  // 7 queued down to 2
    f.scheduler.attemptEnded("fast");
    REQUIRE(f.takeAll().size() == 1);
    CHECK_FALSE(f.scheduler.hasRefill());
  }
  f.scheduler.attemptEnded("fast");
  REQUIRE(f.takeAll().size() == 1);
  CHECK(f.scheduler.queued("fast") == 1);
  CHECK(f.refills() == std::vector<std::string>{"fast"});
}

TEST_CASE("every lane the global cap cut off is refilled once all queues drain below a quarter of it") {
  Fixture f({.maxQueuedPerTarget = 100, .maxQueued = 8});
  const LaneSettings many = settings(100);
  f.fill("a", 4, &many);
  f.fill("b", 4, &many);
  CHECK(f.scheduler.enqueue(task("a", "a-4", "wh-a"), nullptr) == Enqueued::kGlobalCapFull);
  CHECK(f.scheduler.enqueue(task("b", "b-4", "wh-b"), nullptr) == Enqueued::kGlobalCapFull);
  // Taken in turn: a-0, b-0, a-1, b-1, a-2, b-2 leave 1 each, 2 in all,
  // none below its own mark (a quarter of its share of 4: 1) or the total's
  // (8 / 4 = 2).
  for (int i = 0; i < 6; ++i) {
    REQUIRE(f.scheduler.takeNext());
    CHECK_FALSE(f.scheduler.hasRefill());
  }
  // a-3: "a" is below its mark, and the total is below 2, so "b" comes too.
  REQUIRE(f.scheduler.takeNext()->deliveryId == "a-3");
  CHECK(f.scheduler.queued("b") == 1);
  CHECK(f.refills() == std::vector<std::string>{"a", "b"});
}

TEST_CASE("a refill page reads the lane's room (1,000 at most), and the queued and in-flight first") {
  Fixture f({.maxQueuedPerTarget = 5000, .maxQueued = 10'000});
  const LaneSettings two = settings(2);
  f.fill("t", 10, &two);
  REQUIRE(f.takeAll().size() == 2);
  CHECK(f.scheduler.refillPage("wh", "t", true) == 1000 + 8 + 2);
  CHECK(f.scheduler.refillPage("wh", "t", false) == 1000);
  Fixture small({.maxQueuedPerTarget = 10, .maxQueued = 100});
  small.fill("t", 4, &two);
  CHECK(small.scheduler.refillPage("wh", "t", false) == 6);
}

TEST_CASE("a refill page with no room marks the lane, which is refilled once it drains") {
  Fixture f({.maxQueuedPerTarget = 4, .maxQueued = 100});
  const LaneSettings one = settings(1);
  f.fill("t", 4, &one);
  CHECK_FALSE(f.scheduler.refillPage("wh", "t", true));
  CHECK(f.scheduler.leaveToRefill("t"));  // the sweep leaves its rows to that refill
  CHECK(f.refills().empty());
  for (int i = 0; i < 4; ++i) {
    REQUIRE(f.scheduler.takeNext());
    f.scheduler.attemptEnded("t");
  }
  CHECK(f.refills() == std::vector<std::string>{"t"});
  CHECK_FALSE(f.scheduler.leaveToRefill("t"));
}

TEST_CASE("a lane that emptied while cut off asks for its refill when the sweep meets it") {
  Fixture f({.maxQueuedPerTarget = 100, .maxQueued = 4});
  const LaneSettings one = settings(1);
  f.fill("a", 4, &one);
  CHECK(f.scheduler.enqueue(task("b", "b-0", "wh-b"), &one) == Enqueued::kGlobalCapFull);
  CHECK(f.scheduler.leaveToRefill("b"));
  CHECK_FALSE(f.scheduler.hasRefill());  // the cap is full
  REQUIRE(f.scheduler.takeNext());       // room for one; "b" has no task for a worker to take
  CHECK_FALSE(f.scheduler.hasRefill());
  CHECK(f.scheduler.leaveToRefill("b"));
  CHECK(f.refills() == std::vector<std::string>{"b"});
  CHECK_FALSE(f.scheduler.leaveToRefill("b"));
}

TEST_CASE("refills are queued once per key, in order, and none once stopping") {
  Fixture f;
  f.scheduler.queueRefill("wh-1", std::string("t-1"));
  f.scheduler.queueRefill("wh-1", std::nullopt);
  f.scheduler.queueRefill("wh-1", std::string("t-1"));
  CHECK(f.events.refills == 2);
  CHECK(f.refills() == std::vector<std::string>{"t-1", "wh-1"});
  f.scheduler.queueRefill("wh-1", std::string("t-1"));  // taken: may be queued again
  f.scheduler.stop();
  f.scheduler.queueRefill("wh-2", std::nullopt);
  CHECK(f.refills() == std::vector<std::string>{"t-1"});
  CHECK(f.scheduler.enqueue(task("t", "d"), nullptr) == Enqueued::kStopping);
  CHECK_FALSE(f.scheduler.refillPage("wh", "t", true));
}

TEST_CASE("a rate-limited lane waits for its token without taking a worker, then runs") {
  Fixture f;
  const LaneSettings twoPerSecond = settings(8, 2.0);
  f.fill("t", 3, &twoPerSecond);
  // A new bucket holds one token: one task runs now, the lane waits.
  CHECK(f.takeAll() == std::vector<std::string>{"t-0"});
  CHECK(f.events.throttledTypes ==
        std::vector<webhooker::TargetType>{webhooker::TargetType::kSlack});
  REQUIRE(f.scheduler.nextTokenDue());
  CHECK(*f.scheduler.nextTokenDue() == f.clock.now() + 500ms);
  CHECK(f.scheduler.releaseThrottled() == f.clock.now() + 500ms);  // not due yet
  CHECK_FALSE(f.scheduler.hasReady());
  f.clock.advance(500ms);
  CHECK_FALSE(f.scheduler.releaseThrottled());  // listed again: no lane waits
  CHECK(f.takeAll() == std::vector<std::string>{"t-1"});
  CHECK(f.scheduler.nextTokenDue() == f.clock.now() + 500ms);
}

TEST_CASE("a changed rate limit starts a new bucket; dropping it lets the lane run freely") {
  Fixture f;
  const LaneSettings onePerSecond = settings(8, 1.0);
  f.fill("t", 3, &onePerSecond);
  CHECK(f.takeAll().size() == 1);
  const LaneSettings unlimited = settings(8);
  f.scheduler.configure("t", unlimited);
  f.clock.advance(1s);
  f.scheduler.releaseThrottled();
  CHECK(f.takeAll().size() == 2);  // no bucket any more: both run
}

TEST_CASE("a FIFO lane has one head; it goes when its delivery leaves, and the next is read") {
  Fixture f;
  CHECK(f.scheduler.setFifoHead("t", "d-1", "wh"));
  CHECK_FALSE(f.scheduler.setFifoHead("t", "d-2", "wh"));
  CHECK(f.scheduler.fifoHead("t") == "d-1");
  f.scheduler.fifoDeliveryWaiting("wh", "t");
  CHECK(f.refills().empty());  // a busy lane reads the next when its head ends
  f.scheduler.releaseFifoHead("other", true);
  CHECK(f.scheduler.fifoHead("t") == "d-1");
  f.scheduler.releaseFifoHead("d-1", true);
  CHECK_FALSE(f.scheduler.fifoHead("t"));
  CHECK(f.refills() == std::vector<std::string>{"t"});
  f.scheduler.fifoDeliveryWaiting("wh", "t");  // an idle lane reads its head
  CHECK(f.refills() == std::vector<std::string>{"t"});
}

TEST_CASE("a FIFO head the queues refuse stops being the head, and no refill reads it at once") {
  Fixture f({.maxQueuedPerTarget = 1, .maxQueued = 100});
  const LaneSettings one = settings(1);
  f.fill("t", 1, &one);
  REQUIRE(f.scheduler.setFifoHead("t", "head", "wh"));
  CHECK(f.scheduler.enqueue(task("t", "head"), nullptr) == Enqueued::kLaneFull);
  CHECK_FALSE(f.scheduler.fifoHead("t"));
  CHECK(f.refills().empty());
}

}  // namespace
