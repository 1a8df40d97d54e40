// JqShares: the turns, shares and throttle of the jq workers between
// webhooks, with times passed in (no worker, no thread).
#include <doctest/doctest.h>

#include "routing/jq_shares.h"

namespace webhooker {

namespace {

using namespace std::chrono_literals;
const JqShares::TimePoint t0{std::chrono::hours(1)};

// One call of `tenant` that waits, takes a worker at `at` and holds it for
// `held`.
void run(JqShares& shares, std::string_view tenant, JqShares::TimePoint at,
         JqShares::Duration held, bool overran = false) {
  shares.waiting(tenant, at);
  shares.took(tenant, at);
  shares.returned(tenant, overran, held, at + held);
}

}  // namespace

TEST_CASE("webhooks take turns at a free worker, whatever their number of waiting calls") {
  JqShares shares(2, 100ms);
  for (int i = 0; i < 5; ++i) shares.waiting("x", t0);
  CHECK(shares.isTurnOf("x", t0));
  shares.took("x", t0);
  shares.waiting("y", t0);
  // y was never served: it goes before x's four other calls.
  CHECK(shares.isTurnOf("y", t0));
  CHECK_FALSE(shares.isTurnOf("x", t0));
  shares.took("y", t0);
  CHECK(shares.isTurnOf("x", t0));  // only x waits
  shares.returned("x", false, 1ms, t0);
  shares.waiting("y", t0);
  // x was served before y last was: x's turn, though y waits too.
  CHECK(shares.isTurnOf("x", t0));
  CHECK_FALSE(shares.isTurnOf("y", t0));
  shares.took("x", t0);
  CHECK(shares.isTurnOf("y", t0));
}

TEST_CASE("overruns throttle a webhook for a quadrupling time and hold it to one worker") {
  JqShares shares(4, 100ms);
  run(shares, "x", t0, 100ms, true);
  const auto t1 = t0 + 100ms;
  CHECK(shares.throttledUntil("x", t1) == t1 + 100ms);
  CHECK_FALSE(shares.throttledUntil("x", t1 + 100ms));
  CHECK_FALSE(shares.throttledUntil("y", t1));  // nobody else

  shares.waiting("x", t1);
  shares.waiting("x", t1);
  CHECK_FALSE(shares.isTurnOf("x", t1 + 50ms));  // throttled
  const auto t2 = t1 + 100ms;
  CHECK(shares.isTurnOf("x", t2));
  shares.took("x", t2);
  CHECK_FALSE(shares.isTurnOf("x", t2));  // a strike left: one worker at a time
  const auto t3 = t2 + 100ms;
  shares.returned("x", true, 100ms, t3);
  CHECK(shares.throttledUntil("x", t3) == t3 + 400ms);  // two strikes: 4 x 100 ms
  shares.took("x", t3 + 400ms);
  shares.returned("x", true, 100ms, t3 + 500ms);
  CHECK(shares.throttledUntil("x", t3 + 500ms) == t3 + 500ms + 1600ms);  // three: 16 x

  CHECK(shares.struck("x"));
  CHECK_FALSE(shares.struck("y"));

  // A webhook that keeps overrunning rests up to a minute between runs.
  auto t = t3 + 10s;
  run(shares, "x", t, 100ms, true);
  CHECK(shares.throttledUntil("x", t + 100ms) == t + 100ms + 6400ms);  // four strikes
  t += 10s;
  run(shares, "x", t, 100ms, true);
  CHECK(shares.throttledUntil("x", t + 100ms) == t + 100ms + 25600ms);  // five
  t += 30s;
  for (int i = 0; i < 10; ++i, t += 100ms) run(shares, "x", t, 100ms, true);
  CHECK(shares.throttledUntil("x", t) == t + 60s);

  // Runs within their budget take the strikes away one by one.
  JqShares calm(2, 100ms);
  run(calm, "x", t0, 100ms, true);
  calm.waiting("x", t0 + 1s);
  calm.waiting("x", t0 + 1s);
  calm.took("x", t0 + 1s);
  calm.returned("x", false, 1ms, t0 + 1s);
  CHECK_FALSE(calm.struck("x"));
  calm.took("x", t0 + 1s);
  CHECK_FALSE(calm.isTurnOf("x", t0 + 1s));  // no call left waiting
  calm.waiting("x", t0 + 1s);
  CHECK(calm.isTurnOf("x", t0 + 1s));  // no strike: every worker again
}

TEST_CASE("runs just under the budget: the whole pool alone, one worker and last in turn "
          "beside another webhook once over its share") {
  JqShares shares(2, 100ms);
  auto t = t0;
  // Alone, x keeps both workers busy with 95 ms runs for 3 s: every
  // worker's time is its share, so it is never over it.
  for (int i = 0; i < 30; ++i, t += 100ms) {
    run(shares, "x", t, 95ms);
    run(shares, "x", t, 95ms);
  }
  CHECK_FALSE(shares.overShare("x", t));

  // y becomes active (a cheap run every 100 ms): x's share is one worker's
  // time now; it goes on using two, and its account runs out in ~1.1 s.
  for (int i = 0; i < 20; ++i, t += 100ms) {
    run(shares, "x", t, 95ms);
    run(shares, "x", t, 95ms);
    run(shares, "y", t + 95ms, 1ms);
  }
  CHECK(shares.overShare("x", t));
  CHECK_FALSE(shares.overShare("y", t));

  // Over its share, x goes after y though y was served later...
  shares.waiting("x", t);
  shares.waiting("x", t);
  shares.waiting("y", t);
  CHECK(shares.isTurnOf("y", t));
  CHECK_FALSE(shares.isTurnOf("x", t));
  shares.took("y", t);
  // ...takes a worker nobody else waits for...
  CHECK(shares.isTurnOf("x", t));
  shares.took("x", t);
  // ...and holds one at a time, though a worker is free.
  CHECK_FALSE(shares.isTurnOf("x", t));
  shares.returned("y", false, 1ms, t + 1ms);
  CHECK_FALSE(shares.isTurnOf("x", t + 1ms));
  shares.returned("x", false, 95ms, t + 95ms);

  // Its account refills at its share while it rests: within it again.
  shares.gaveUp("x", t + 95ms);
  CHECK(shares.overShare("x", t + 100ms));
  CHECK_FALSE(shares.overShare("x", t + 3s));
}

}  // namespace webhooker
