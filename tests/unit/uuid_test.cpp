// Ids: UUIDs in canonical lowercase form (v4, or v7 for events and
// deliveries); anything else refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <thread>
#include <vector>
#include <set>
#include <string>

#include "base/uuid.h"

using webhooker::isUuid;
using webhooker::newTimeOrderedUuid;
using webhooker::newUuid;
using webhooker::normalizeUuid;

TEST_CASE("newUuid is a canonical lowercase version 4 uuid") {
  for (int i = 0; i < 200; ++i) {
    const std::string id = newUuid();
    CAPTURE(id);
    REQUIRE(id.size() == 36);
    for (size_t j = 0; j < id.size(); ++j) {
      if (j == 8 || j == 13 || j == 18 || j == 23) {
        CHECK(id[j] == '-');
      } else {
        const char c = id[j];
        CHECK(((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')));
      }
    }
    CHECK(id[14] == '4');  // version nibble
    const char variant = id[19];
    CHECK((variant == '8' || variant == '9' || variant == 'a' || variant == 'b'));
    CHECK(isUuid(id));
    CHECK(normalizeUuid(id) == id);
  }
}

namespace {

int64_t unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The 48-bit millisecond timestamp a UUIDv7 starts with.
int64_t timestampOf(const std::string& id) {
  return std::stoll(id.substr(0, 8) + id.substr(9, 4), nullptr, 16);
}

}  // namespace

TEST_CASE("newTimeOrderedUuid is a version 7 uuid that starts with the time in ms") {
  const int64_t before = unixMs();
  const std::string id = newTimeOrderedUuid();
  const int64_t after = unixMs();
  CAPTURE(id);
  CHECK(isUuid(id));
  CHECK(normalizeUuid(id) == id);
  CHECK(id[14] == '7');
  CHECK(std::string("89ab").find(id[19]) != std::string::npos);
  CHECK(timestampOf(id) >= before);
  CHECK(timestampOf(id) <= after);
}

TEST_CASE("newTimeOrderedUuid: ids made in later milliseconds sort after earlier ones") {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(newTimeOrderedUuid());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  CHECK(std::is_sorted(ids.begin(), ids.end()));
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(newTimeOrderedUuid());
  CHECK(seen.size() == 1000);  // random bits within one millisecond
}

TEST_CASE("newUuid gives 1000 different ids") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(newUuid());
  CHECK(seen.size() == 1000);
}

TEST_CASE("ids made on four threads at once are all different, past each thread's buffer") {
  // Each thread draws its random bytes from a buffer of its own, 256 ids long.
  std::vector<std::vector<std::string>> made(4);
  std::vector<std::thread> threads;
  for (auto& ids : made)
    threads.emplace_back([&ids] {
      for (int i = 0; i < 1000; ++i) ids.push_back(i % 2 ? newUuid() : newTimeOrderedUuid());
    });
  for (auto& t : threads) t.join();
  std::set<std::string> seen;
  for (const auto& ids : made) seen.insert(ids.begin(), ids.end());
  CHECK(seen.size() == 4000);
  // Random parts too: a v7 id's first 48 bits are its millisecond.
  std::set<std::string> tails;
  for (const auto& ids : made)
    for (const std::string& id : ids) tails.insert(id.substr(14));
  CHECK(tails.size() == 4000);
}

TEST_CASE("newUuid uses every variant value over many draws") {
  // The variant nibble carries two random bits: 8, 9, a and b must all show up.
  std::set<char> variants;
  for (int i = 0; i < 400; ++i) variants.insert(newUuid()[19]);
  CHECK(variants == std::set<char>{'8', '9', 'a', 'b'});
}

TEST_CASE("isUuid accepts the canonical form in lower and upper case") {
  CHECK(isUuid("123e4567-e89b-42d3-a456-426614174000"));
  CHECK(isUuid("123E4567-E89B-42D3-A456-426614174000"));
  CHECK(isUuid("AbCdEf01-2345-4678-9abc-DEF012345678"));
  CHECK(isUuid("00000000-0000-0000-0000-000000000000"));
}

TEST_CASE("isUuid refuses wrong lengths") {
  CHECK_FALSE(isUuid(""));
  CHECK_FALSE(isUuid("123e4567-e89b-42d3-a456-42661417400"));    // 35
  CHECK_FALSE(isUuid("123e4567-e89b-42d3-a456-4266141740000"));  // 37
  CHECK_FALSE(isUuid("123e4567e89b42d3a456426614174000"));       // no dashes, 32
  CHECK_FALSE(isUuid("{123e4567-e89b-42d3-a456-426614174000}"));
  CHECK_FALSE(isUuid(" 123e4567-e89b-42d3-a456-426614174000"));
}

TEST_CASE("isUuid refuses misplaced or missing dashes") {
  CHECK_FALSE(isUuid("123e45670e89b-42d3-a456-426614174000"));  // 36 chars, dash moved
  CHECK_FALSE(isUuid("123e4567-e89b-42d3-a4564-26614174000"));
  CHECK_FALSE(isUuid("123e4567xe89bx42d3xa456x426614174000"));
  CHECK_FALSE(isUuid("123e4567-e89b-42d3-a456-4266-4174000"));
  CHECK_FALSE(isUuid("------------------------------------"));
}

TEST_CASE("isUuid refuses non-hex characters") {
  CHECK_FALSE(isUuid("123e4567-e89b-42d3-a456-42661417400g"));
  CHECK_FALSE(isUuid("g23e4567-e89b-42d3-a456-426614174000"));
  CHECK_FALSE(isUuid("123e4567-e89b-42d3-a456-42661417400 "));
  CHECK_FALSE(isUuid("../../../../etc/passwd-0000-00000000"));
  std::string withNul = "123e4567-e89b-42d3-a456-426614174000";
  withNul[5] = '\0';
  CHECK_FALSE(isUuid(withNul));
}

TEST_CASE("normalizeUuid lowercases") {
  CHECK(normalizeUuid("123E4567-E89B-42D3-A456-426614174ABC") ==
        "123e4567-e89b-42d3-a456-426614174abc");
  CHECK(normalizeUuid("123e4567-e89b-42d3-a456-426614174abc") ==
        "123e4567-e89b-42d3-a456-426614174abc");
}
