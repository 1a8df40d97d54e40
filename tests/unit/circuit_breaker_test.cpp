// CircuitBreakers with a FakeClock: closed -> 5 consecutive failures -> open
// (refusals say how long is left) -> after 30 s half-open with exactly one
// probe -> success closes / failure reopens for another 30 s; openCount()
// and the state-change listener follow every open/closed change.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "targets/circuit_breaker.h"
#include "tests/support/fake_clock.h"

namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using webhooker::BreakerState;
using webhooker::CircuitBreakers;
using webhooker::testing::FakeClock;

constexpr const char* kTarget = "7d9c1f0e-4a2b-4c3d-8e5f-6a7b8c9d0e1f";
constexpr const char* kOther = "0f1e2d3c-4b5a-4968-8776-655443322110";

struct Fixture {
  FakeClock clock;
  CircuitBreakers breakers{clock};
  std::mutex eventsMutex;  // guards events: the listener may run on any thread
  std::vector<int> events;

  Fixture() {
    breakers.onStateChange([this](int open) {
      std::lock_guard lock(eventsMutex);
      events.push_back(open);
    });
  }
  std::vector<int> listenerCalls() {
    std::lock_guard lock(eventsMutex);
    return events;
  }
  void fail(int n, const char* target = kTarget) {
    for (int i = 0; i < n; ++i) breakers.recordFailure(target);
  }
  // Opens kTarget's breaker: the default threshold of failures in a row.
  void open(const char* target = kTarget) { fail(CircuitBreakers::kDefaultThreshold, target); }
};

}  // namespace

TEST_CASE("the defaults are 5 failures and 30 s") {
  CHECK(CircuitBreakers::kDefaultThreshold == 5);
  CHECK(CircuitBreakers::kDefaultCooldown == 30s);
}

TEST_CASE_FIXTURE(Fixture, "a target never seen is allowed") {
  const auto d = breakers.allow(kTarget);
  CHECK(d.allowed);
  CHECK(d.retryIn == 0ms);
  CHECK(breakers.openCount() == 0);
}

TEST_CASE_FIXTURE(Fixture, "the breaker opens on the 5th consecutive failure, not before") {
  fail(4);
  CHECK(breakers.allow(kTarget).allowed);
  CHECK(breakers.openCount() == 0);
  CHECK(listenerCalls().empty());

  fail(1);
  const auto refused = breakers.allow(kTarget);
  CHECK_FALSE(refused.allowed);
  CHECK(refused.retryIn == 30s);
  CHECK(breakers.openCount() == 1);
  CHECK(listenerCalls() == std::vector<int>{1});
}

TEST_CASE_FIXTURE(Fixture, "a success in between resets the count: failures must be consecutive") {
  fail(4);
  breakers.recordSuccess(kTarget);
  fail(4);
  CHECK(breakers.allow(kTarget).allowed);
  CHECK(breakers.openCount() == 0);
  fail(1);
  CHECK_FALSE(breakers.allow(kTarget).allowed);
}

TEST_CASE_FIXTURE(Fixture, "refusals return the remaining cooldown") {
  open();
  CHECK(breakers.allow(kTarget).retryIn == 30000ms);
  clock.advance(10s);
  CHECK(breakers.allow(kTarget).retryIn == 20000ms);
  clock.advance(19999ms);
  const auto last = breakers.allow(kTarget);
  CHECK_FALSE(last.allowed);
  CHECK(last.retryIn == 1ms);
  // Refusals change nothing: still one open breaker, no extra listener call.
  CHECK(breakers.openCount() == 1);
  CHECK(listenerCalls() == std::vector<int>{1});
}

TEST_CASE_FIXTURE(Fixture, "failures while open do not extend the cooldown") {
  open();
  clock.advance(20s);
  fail(3);  // attempts started before the breaker opened, finishing late
  CHECK(breakers.allow(kTarget).retryIn == 10s);
}

TEST_CASE_FIXTURE(Fixture, "after the cooldown exactly one probe is let through") {
  open();
  clock.advance(30s);
  const auto probe = breakers.allow(kTarget);
  CHECK(probe.allowed);
  // A second caller while the probe is out is refused, and told to look again.
  const auto second = breakers.allow(kTarget);
  CHECK_FALSE(second.allowed);
  CHECK(second.retryIn > 0ms);
  CHECK(second.retryIn <= 30s);
  CHECK_FALSE(breakers.allow(kTarget).allowed);
  // Half-open still counts as open.
  CHECK(breakers.openCount() == 1);
}

TEST_CASE_FIXTURE(Fixture, "exactly one probe also when many threads ask at once") {
  open();
  clock.advance(30s);
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      for (int k = 0; k < 100; ++k)
        if (breakers.allow(kTarget).allowed) ++allowed;
    });
  for (auto& t : threads) t.join();
  CHECK(allowed.load() == 1);
}

TEST_CASE_FIXTURE(Fixture, "a successful probe closes the breaker") {
  open();
  clock.advance(30s);
  REQUIRE(breakers.allow(kTarget).allowed);
  breakers.recordSuccess(kTarget);
  CHECK(breakers.openCount() == 0);
  CHECK(listenerCalls() == std::vector<int>{1, 0});
  for (int i = 0; i < 3; ++i) CHECK(breakers.allow(kTarget).allowed);
  // Closed and counting from zero again: 4 failures do not reopen it.
  fail(4);
  CHECK(breakers.allow(kTarget).allowed);
}

TEST_CASE_FIXTURE(Fixture, "a failed probe reopens the breaker for another full cooldown") {
  open();
  clock.advance(30s);
  REQUIRE(breakers.allow(kTarget).allowed);
  clock.advance(2s);  // the probe took a while
  breakers.recordFailure(kTarget);

  const auto refused = breakers.allow(kTarget);
  CHECK_FALSE(refused.allowed);
  CHECK(refused.retryIn == 30s);  // counted from the probe's failure
  clock.advance(29999ms);
  CHECK_FALSE(breakers.allow(kTarget).allowed);
  clock.advance(1ms);
  CHECK(breakers.allow(kTarget).allowed);  // the next probe
  CHECK_FALSE(breakers.allow(kTarget).allowed);
  // Open -> half-open -> open is no change of open/closed: one listener call.
  CHECK(breakers.openCount() == 1);
  CHECK(listenerCalls() == std::vector<int>{1});
}

TEST_CASE_FIXTURE(Fixture, "breakers are per target and openCount counts them") {
  open(kTarget);
  CHECK(breakers.allow(kOther).allowed);
  open(kOther);
  CHECK(breakers.openCount() == 2);
  CHECK(listenerCalls() == std::vector<int>{1, 2});

  clock.advance(30s);
  REQUIRE(breakers.allow(kTarget).allowed);
  breakers.recordSuccess(kTarget);
  CHECK(breakers.openCount() == 1);
  CHECK(breakers.allow(kOther).allowed);  // kOther is half-open now: this is its probe
  CHECK(listenerCalls() == std::vector<int>{1, 2, 1});
}

TEST_CASE_FIXTURE(Fixture, "reset forgets a breaker and reports the change") {
  open();
  breakers.reset(kTarget);
  CHECK(breakers.openCount() == 0);
  CHECK(breakers.allow(kTarget).allowed);
  CHECK(listenerCalls() == std::vector<int>{1, 0});
  // Resetting a closed or unknown breaker is no change.
  breakers.reset(kTarget);
  breakers.reset(kOther);
  CHECK(listenerCalls() == std::vector<int>{1, 0});
}

TEST_CASE("threshold and cooldown are configurable") {
  FakeClock clock;
  CircuitBreakers breakers(clock, 2, 1500ms);
  breakers.recordFailure(kTarget);
  CHECK(breakers.allow(kTarget).allowed);
  breakers.recordFailure(kTarget);
  const auto refused = breakers.allow(kTarget);
  CHECK_FALSE(refused.allowed);
  CHECK(refused.retryIn == 1500ms);
  clock.advance(1500ms);
  CHECK(breakers.allow(kTarget).allowed);
}

TEST_CASE_FIXTURE(Fixture, "a probe released without an outcome lets the next caller probe") {
  open();
  clock.advance(30s);
  REQUIRE(breakers.allow(kTarget).allowed);
  CHECK_FALSE(breakers.allow(kTarget).allowed);
  // The probe sent nothing (refused destination): the breaker stays
  // half-open, but the next caller becomes the probe.
  breakers.releaseProbe(kTarget);
  CHECK(breakers.openCount() == 1);
  CHECK(breakers.allow(kTarget).allowed);
  CHECK_FALSE(breakers.allow(kTarget).allowed);
  breakers.recordSuccess(kTarget);
  CHECK(breakers.openCount() == 0);
}

TEST_CASE_FIXTURE(Fixture, "releasing a probe changes nothing when closed or open") {
  breakers.releaseProbe(kTarget);  // unknown
  fail(2);
  breakers.releaseProbe(kTarget);  // closed, counting
  fail(3);
  CHECK(breakers.openCount() == 1);  // the count was not reset
  breakers.releaseProbe(kTarget);    // open: still refused for the full cooldown
  CHECK(breakers.allow(kTarget).retryIn == 30s);
}

TEST_CASE_FIXTURE(Fixture, "status() shows closed with its failure count, open with the time left, then half-open") {
  auto s = breakers.status(kTarget);
  CHECK(s.state == BreakerState::kClosed);
  CHECK(s.consecutiveFailures == 0);
  fail(3);
  s = breakers.status(kTarget);
  CHECK(s.state == BreakerState::kClosed);
  CHECK(s.consecutiveFailures == 3);
  CHECK(breakers.status(kOther).consecutiveFailures == 0);

  fail(2);
  clock.advance(12s);
  s = breakers.status(kTarget);
  CHECK(s.state == BreakerState::kOpen);
  CHECK(s.consecutiveFailures == 5);
  CHECK(s.retryIn == 18s);
  // Past the cooldown the next attempt is the probe, whether or not it started.
  clock.advance(18s);
  CHECK(breakers.status(kTarget).state == BreakerState::kHalfOpen);
  CHECK(breakers.allow(kTarget).allowed);
  s = breakers.status(kTarget);
  CHECK(s.state == BreakerState::kHalfOpen);
  CHECK(s.retryIn == 0ms);

  breakers.recordSuccess(kTarget);
  CHECK(breakers.status(kTarget).state == BreakerState::kClosed);
  CHECK(breakers.status(kTarget).consecutiveFailures == 0);
}

TEST_CASE("every change of state is reported as a transition, with its webhook and failures") {
  FakeClock clock;
  CircuitBreakers breakers(clock, 2, 30s);
  std::vector<CircuitBreakers::Transition> seen;
  breakers.onTransition([&](const CircuitBreakers::Transition& t) { seen.push_back(t); });
  breakers.recordFailure(kTarget, webhooker::TargetType::kHttp, "wh-1");
  CHECK(seen.empty());  // counted, not a change of state
  breakers.recordFailure(kTarget, webhooker::TargetType::kHttp, "wh-1");
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].from == BreakerState::kClosed);
  CHECK(seen[0].to == BreakerState::kOpen);
  CHECK(seen[0].webhookId == "wh-1");
  CHECK(seen[0].targetType == webhooker::TargetType::kHttp);
  CHECK(seen[0].consecutiveFailures == 2);
  CHECK(seen[0].openedAt == clock.now());
  clock.advance(30s);
  CHECK(breakers.allow(kTarget).allowed);
  REQUIRE(seen.size() == 2);
  CHECK(seen[1].to == BreakerState::kHalfOpen);
  breakers.recordFailure(kTarget, webhooker::TargetType::kHttp, "wh-1");  // the probe failed
  REQUIRE(seen.size() == 3);
  CHECK(seen[2].from == BreakerState::kHalfOpen);
  CHECK(seen[2].to == BreakerState::kOpen);
  clock.advance(30s);
  CHECK(breakers.allow(kTarget).allowed);
  breakers.recordSuccess(kTarget);
  REQUIRE(seen.size() == 5);
  CHECK(seen[4].from == BreakerState::kHalfOpen);
  CHECK(seen[4].to == BreakerState::kClosed);
  breakers.reset(kTarget);  // closed already: nothing to report
  CHECK(seen.size() == 5);
}

TEST_CASE("a restored open breaker keeps its cooldown from when it opened") {
  FakeClock clock;
  CircuitBreakers breakers(clock, 5, 30s);
  std::vector<int> openCounts;
  breakers.onStateChange([&](int n) { openCounts.push_back(n); });
  webhooker::StoredTargetHealth stored;
  stored.targetId = kTarget;
  stored.webhookId = "wh-1";
  stored.targetType = webhooker::TargetType::kHttp;
  stored.breakerState = BreakerState::kHalfOpen;  // its probe died with the process
  stored.consecutiveFailures = 5;
  breakers.restore(stored, clock.now() - 20s);
  CHECK(openCounts == std::vector<int>{1});
  CHECK(breakers.openCountByType().at(webhooker::TargetType::kHttp) == 1);
  const CircuitBreakers::Status s = breakers.status(kTarget);
  CHECK(s.state == BreakerState::kOpen);
  CHECK(s.retryIn == 10s);
  CHECK(s.consecutiveFailures == 5);
  CHECK_FALSE(breakers.allow(kTarget).allowed);
  clock.advance(10s);
  CHECK(breakers.allow(kTarget).allowed);  // the probe
}
