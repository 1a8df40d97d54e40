// jsonDepthWithin: the nesting of arrays and objects, counted on the text
// (strings and escapes skipped), so that nothing deeper than the limit ever
// reaches a recursive dump() or merge_patch().
#include <doctest/doctest.h>

#include <string>

#include "base/json_depth.h"

namespace {

using webhooker::jsonDepthWithin;
using webhooker::kMaxJsonDepth;

std::string arrays(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

TEST_CASE("depth is counted over arrays and objects alike") {
  CHECK(jsonDepthWithin("", 0));
  CHECK(jsonDepthWithin("42", 0));
  CHECK_FALSE(jsonDepthWithin("[]", 0));
  CHECK(jsonDepthWithin("[]", 1));
  CHECK(jsonDepthWithin(R"({"a":[1,{"b":2}],"c":{}})", 3));
  CHECK_FALSE(jsonDepthWithin(R"({"a":[1,{"b":[2]}]})", 3));
  // Siblings do not add up: depth goes down at each close.
  CHECK(jsonDepthWithin("[[],[],[],[]]", 2));
}

TEST_CASE("the default limit: kMaxJsonDepth levels pass, one more does not") {
  CHECK(jsonDepthWithin(arrays(kMaxJsonDepth)));
  CHECK_FALSE(jsonDepthWithin(arrays(kMaxJsonDepth + 1)));
  CHECK_FALSE(jsonDepthWithin(std::string(100000, '[')));  // unclosed counts too
  CHECK_FALSE(jsonDepthWithin(arrays(100000)));
}

TEST_CASE("brackets inside strings, escaped quotes included, do not count") {
  CHECK(jsonDepthWithin(R"(["[[[[{{{{"])", 1));
  CHECK(jsonDepthWithin(R"(["a \"[[[[\" b"])", 1));
  CHECK(jsonDepthWithin(R"(["\\", ["x"]])", 2));
  CHECK_FALSE(jsonDepthWithin(R"(["\\", [["x"]]])", 2));  // \\ ends the escape, not the string
}

TEST_CASE("stray closing brackets never make room for deeper nesting") {
  CHECK_FALSE(jsonDepthWithin("]]]][[[", 2));
  CHECK(jsonDepthWithin("]]]][[", 2));
}
