// JqShares: the turns and throttle of the jq workers between webhooks, with
// times passed in (no worker, no thread).
#include <doctest/doctest.h>

#include "routing/jq_shares.h"

namespace webhooker {

namespace {

using namespace std::chrono_literals;
const JqShares::TimePoint t0{};

}  // namespace

TEST_CASE("webhooks take turns at a free worker, whatever their number of waiting calls") {
  JqShares shares(2, 100ms);
  for (int i = 0; i < 5; ++i) shares.waiting("x");
  CHECK(shares.isTurnOf("x", t0));
  shares.took("x");
  shares.waiting("y");
  // y was never served: it goes before x's four other calls.
  CHECK(shares.isTurnOf("y", t0));
  CHECK_FALSE(shares.isTurnOf("x", t0));
  shares.took("y");
  CHECK(shares.isTurnOf("x", t0));  // only x waits
  shares.returned("x", false, t0);
  shares.waiting("y");
  // x was served before y last was: x's turn, though y waits too.
  CHECK(shares.isTurnOf("x", t0));
  CHECK_FALSE(shares.isTurnOf("y", t0));
  shares.took("x");
  CHECK(shares.isTurnOf("y", t0));
  // A webhook with nothing waiting or running starts afresh: first in turn.
  shares.took("y");
  shares.returned("y", false, t0);
  shares.returned("y", false, t0);
  shares.waiting("y");
  CHECK(shares.isTurnOf("y", t0));
}

TEST_CASE("overruns throttle a webhook for a doubling time and hold it to one worker") {
  JqShares shares(4, 100ms);
  shares.waiting("x");
  shares.took("x");
  shares.returned("x", true, t0);
  CHECK(shares.throttledUntil("x", t0) == t0 + 100ms);
  CHECK_FALSE(shares.throttledUntil("x", t0 + 100ms));
  CHECK_FALSE(shares.throttledUntil("y", t0));  // nobody else

  shares.waiting("x");
  shares.waiting("x");
  CHECK_FALSE(shares.isTurnOf("x", t0 + 50ms));  // throttled
  CHECK(shares.isTurnOf("x", t0 + 100ms));
  shares.took("x");
  CHECK_FALSE(shares.isTurnOf("x", t0 + 100ms));  // a strike left: one worker at a time
  shares.returned("x", true, t0 + 200ms);
  CHECK(shares.throttledUntil("x", t0 + 200ms) == t0 + 400ms);  // two strikes: 200 ms

  for (int i = 0; i < 10; ++i) {
    shares.took("x");
    shares.returned("x", true, t0 + 1s);
    shares.waiting("x");
  }
  CHECK(shares.throttledUntil("x", t0 + 1s) == t0 + 1s + JqShares::kMaxThrottle);

  // Runs within their budget take the strikes away one by one.
  JqShares calm(2, 100ms);
  calm.waiting("x");
  calm.took("x");
  calm.returned("x", true, t0);
  calm.waiting("x");
  calm.waiting("x");
  calm.took("x");
  calm.returned("x", false, t0 + 1s);
  calm.took("x");
  CHECK(calm.isTurnOf("x", t0 + 1s) == false);  // waiting none left
  calm.waiting("x");
  CHECK(calm.isTurnOf("x", t0 + 1s));  // no strike: every worker again
}

}  // namespace webhooker
