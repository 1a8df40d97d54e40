// Backoff: delay(n) = min(base * 2^(n-1), max) * (1 + U(-jitter, +jitter))
// with the jitter draw pinned by a fixed Random, Retry-After clamped to
// [computed, max_delay], and Retry-After parsing (seconds and HTTP-date).
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include "targets/backoff.h"
#include "targets/http_client.h"

namespace {

using std::chrono::milliseconds;
using webhooker::applyRetryAfter;
using webhooker::parseRetryAfter;
using webhooker::Random;
using webhooker::retryDelay;
using webhooker::RetryPolicy;

// Answers a fixed point of the range (0 low end, 1 high end) and records
// every range it was asked for.
class PinnedRandom final : public Random {
 public:
  explicit PinnedRandom(double position) : position_(position) {}
  double uniform(double low, double high) override {
    ranges.emplace_back(low, high);
    return low + (high - low) * position_;
  }
  std::vector<std::pair<double, double>> ranges;

 private:
  const double position_;
};

RetryPolicy policy(int64_t baseMs, int64_t maxMs, double jitter) {
  RetryPolicy p;
  p.baseDelayMs = baseMs;
  p.maxDelayMs = maxMs;
  p.jitter = jitter;
  return p;
}

}  // namespace

TEST_CASE("the default policy: 5 retries, 2 s doubling to 300 s, 20 % jitter") {
  const RetryPolicy p;
  CHECK(p.maxRetries == 5);
  CHECK(p.baseDelayMs == 2000);
  CHECK(p.maxDelayMs == 300000);
  CHECK(p.jitter == doctest::Approx(0.2));
}

TEST_CASE("without jitter the delay doubles from base and stops at max") {
  PinnedRandom middle(0.5);
  const RetryPolicy p = policy(2000, 300000, 0.2);
  const std::vector<int64_t> expected = {2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000,
                                         300000, 300000};
  for (int n = 1; n <= static_cast<int>(expected.size()); ++n) {
    CAPTURE(n);
    CHECK(retryDelay(p, n, middle) == milliseconds(expected[static_cast<size_t>(n - 1)]));
  }
}

TEST_CASE("jitter scales the capped delay by 1 + U(-j, +j)") {
  const RetryPolicy p = policy(2000, 300000, 0.2);
  SUBCASE("the low end of the draw: 80 %") {
    PinnedRandom low(0.0);
    CHECK(retryDelay(p, 1, low) == milliseconds(1600));
    CHECK(retryDelay(p, 3, low) == milliseconds(6400));
    // Capped first, then jittered: 300 s * 0.8.
    CHECK(retryDelay(p, 12, low) == milliseconds(240000));
  }
  SUBCASE("the high end of the draw: 120 %") {
    PinnedRandom high(1.0);
    CHECK(retryDelay(p, 1, high) == milliseconds(2400));
    CHECK(retryDelay(p, 3, high) == milliseconds(9600));
    CHECK(retryDelay(p, 12, high) == milliseconds(360000));
  }
  SUBCASE("the draw is asked for exactly [-jitter, +jitter]") {
    PinnedRandom r(0.25);
    CHECK(retryDelay(policy(1000, 60000, 0.3), 2, r) == milliseconds(1700));  // 2000 * 0.85
    REQUIRE(r.ranges.size() == 1);
    CHECK(r.ranges[0].first == doctest::Approx(-0.3));
    CHECK(r.ranges[0].second == doctest::Approx(0.3));
  }
  SUBCASE("zero jitter is exact whatever the draw") {
    PinnedRandom high(1.0);
    CHECK(retryDelay(policy(100, 300000, 0.0), 4, high) == milliseconds(800));
  }
}

TEST_CASE("the retry number is clamped: no overflow, nothing below base") {
  PinnedRandom middle(0.5);
  const RetryPolicy p = policy(2000, 300000, 0.2);
  CHECK(retryDelay(p, 0, middle) == milliseconds(2000));
  CHECK(retryDelay(p, -3, middle) == milliseconds(2000));
  CHECK(retryDelay(p, 64, middle) == milliseconds(300000));
  CHECK(retryDelay(p, 1'000'000, middle) == milliseconds(300000));
  // A huge max: 2^40 * base would overflow int64 milliseconds if not capped
  // by the exponent clamp.
  CHECK(retryDelay(policy(1000, 86'400'000, 0.0), 1000, middle) == milliseconds(86'400'000));
}

TEST_CASE("Retry-After is honoured within [computed, max_delay]") {
  const RetryPolicy p = policy(2000, 300000, 0.2);
  const milliseconds computed(4000);
  SUBCASE("absent: the computed delay") {
    CHECK(applyRetryAfter(computed, std::nullopt, p) == computed);
  }
  SUBCASE("longer than computed: honoured") {
    CHECK(applyRetryAfter(computed, milliseconds(120000), p) == milliseconds(120000));
  }
  SUBCASE("shorter than computed (or 0): never hammers faster than the backoff") {
    CHECK(applyRetryAfter(computed, milliseconds(1000), p) == computed);
    CHECK(applyRetryAfter(computed, milliseconds(0), p) == computed);
  }
  SUBCASE("beyond max_delay: max_delay, never stalls forever") {
    CHECK(applyRetryAfter(computed, milliseconds(10'000'000), p) == milliseconds(300000));
  }
  SUBCASE("a jittered computed delay above max_delay still ends at max_delay") {
    CHECK(applyRetryAfter(milliseconds(360000), milliseconds(1000), p) == milliseconds(300000));
    CHECK(applyRetryAfter(milliseconds(360000), milliseconds(400000), p) ==
          milliseconds(300000));
  }
}

TEST_CASE("Retry-After values parse as seconds or an HTTP-date") {
  using std::chrono::system_clock;
  // 2026-11-29T17:48:05Z
  const auto now = system_clock::from_time_t(1'795'974'485);
  CHECK(parseRetryAfter("2", now) == milliseconds(2000));
  CHECK(parseRetryAfter("0", now) == milliseconds(0));
  CHECK(parseRetryAfter("120", now) == milliseconds(120000));
  // Far too large to be meant: parsed as something huge, clamped later.
  const auto huge = parseRetryAfter("99999999999999999999", now);
  REQUIRE(huge);
  CHECK(applyRetryAfter(milliseconds(2000), huge, policy(2000, 300000, 0.2)) ==
        milliseconds(300000));

  CHECK(parseRetryAfter("Sun, 29 Nov 2026 17:48:35 GMT", now) == milliseconds(30000));
  // A date in the past means "now".
  CHECK(parseRetryAfter("Sun, 29 Nov 2026 17:00:00 GMT", now) == milliseconds(0));

  CHECK_FALSE(parseRetryAfter("", now));
  CHECK_FALSE(parseRetryAfter("soon", now));
  CHECK_FALSE(parseRetryAfter("-5", now));
  CHECK_FALSE(parseRetryAfter("1.5", now));
  CHECK_FALSE(parseRetryAfter("Sun, 29 Nov 2026 17:48:35 GMT trailing", now));
}
