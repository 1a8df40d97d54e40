#include "base/time_format.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

namespace webhooker {

namespace {

// Days since 1970-01-01 for a civil date (Howard Hinnant's algorithm).
long long daysFromCivil(long long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

bool readInt(std::string_view& s, size_t width, int& out) {
  if (s.size() < width) return false;
  for (size_t i = 0; i < width; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  std::from_chars(s.data(), s.data() + width, out);
  s.remove_prefix(width);
  return true;
}

bool expect(std::string_view& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

}  // namespace

std::string formatTime(TimePoint t) {
  using namespace std::chrono;
  const auto ms = floor<milliseconds>(t.time_since_epoch()).count();
  const auto days = floor<std::chrono::days>(t.time_since_epoch());
  const year_month_day ymd{sys_days{days}};
  long long msOfDay = ms - duration_cast<milliseconds>(days).count();
  const int h = static_cast<int>(msOfDay / 3600000);
  msOfDay %= 3600000;
  const int mi = static_cast<int>(msOfDay / 60000);
  msOfDay %= 60000;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                     static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                     static_cast<unsigned>(ymd.day()), h, mi, msOfDay / 1000, msOfDay % 1000);
}

std::optional<TimePoint> parseTime(std::string_view s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (!readInt(s, 4, y) || !expect(s, '-') || !readInt(s, 2, mo) || !expect(s, '-') ||
      !readInt(s, 2, d))
    return std::nullopt;
  long long millis = 0;
  int offsetMinutes = 0;
  if (!s.empty()) {
    if (s.front() != 'T' && s.front() != 't' && s.front() != ' ') return std::nullopt;
    s.remove_prefix(1);
    if (!readInt(s, 2, h) || !expect(s, ':') || !readInt(s, 2, mi) || !expect(s, ':') ||
        !readInt(s, 2, sec))
      return std::nullopt;
    if (!s.empty() && s.front() == '.') {
      s.remove_prefix(1);
      int digits = 0;
      long long frac = 0;
      while (!s.empty() && std::isdigit(static_cast<unsigned char>(s.front()))) {
        if (digits < 3) { frac = frac * 10 + (s.front() - '0'); ++digits; }
        s.remove_prefix(1);
      }
      if (digits == 0) return std::nullopt;
      while (digits++ < 3) frac *= 10;
      millis = frac;
    }
    if (s == "Z" || s == "z") {
      s.remove_prefix(1);
    } else if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
      const int sign = s.front() == '+' ? 1 : -1;
      s.remove_prefix(1);
      int oh = 0, om = 0;
      if (!readInt(s, 2, oh) || !expect(s, ':') || !readInt(s, 2, om)) return std::nullopt;
      if (oh > 23 || om > 59) return std::nullopt;
      offsetMinutes = sign * (oh * 60 + om);
    } else {
      return std::nullopt;  // a time without a zone is ambiguous: refuse it
    }
  }
  if (!s.empty()) return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year{y}, std::chrono::month{static_cast<unsigned>(mo)},
                                        std::chrono::day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return std::nullopt;
  const long long days = daysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  const long long totalMs =
      ((days * 86400LL + h * 3600LL + mi * 60LL + sec) - offsetMinutes * 60LL) * 1000LL + millis;
  return TimePoint{std::chrono::duration_cast<TimePoint::duration>(std::chrono::milliseconds{totalMs})};
}

}  // namespace webhooker
