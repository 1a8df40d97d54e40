// Retry-After values as a receiver sends them (parseRetryAfter). Properties:
// never negative; delay-seconds are exact; an HTTP-date that parses names a
// point in time that formats and parses back to the same delay.
#include <fuzzer/FuzzedDataProvider.h>

#include <chrono>
#include <ctime>
#include <string>

#include "fuzz/fuzz_check.h"
#include "targets/http_client.h"

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string imfFixdate(webhooker::TimePoint t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[64];
  std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  // "now" on a whole second between 1970 and 2100, so dates round-trip exactly.
  const webhooker::TimePoint now{seconds(in.ConsumeIntegralInRange<int64_t>(0, 4'102'444'800))};
  const std::string value = in.ConsumeRemainingBytesAsString();

  const auto delay = webhooker::parseRetryAfter(value, now);
  if (!delay) return 0;
  FUZZ_CHECK(delay->count() >= 0);
  if (value.find_first_not_of("0123456789") == std::string::npos && value.size() <= 9)
    FUZZ_CHECK(*delay == seconds(std::stoll(value)));
  else if (value.find_first_not_of("0123456789") != std::string::npos && delay->count() > 0 &&
           *delay < std::chrono::hours(24 * 365 * 100))  // a time point holds ~292 years
    FUZZ_CHECK(webhooker::parseRetryAfter(imfFixdate(now + *delay), now) == delay);
  return 0;
}
