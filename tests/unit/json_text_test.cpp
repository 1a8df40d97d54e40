// isJsonText: the one-pass check must say what parseJsonText (nlohmann, after
// the NUL and depth checks) says, on every case where they could part: the
// grammar's edges, escapes and surrogates, UTF-8, number overflow, depth.
#include "base/json_text.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "base/json_depth.h"

namespace {

using webhooker::isJsonText;
using webhooker::kMaxJsonDepth;
using webhooker::parseJsonText;

bool parses(const std::string& text) { return !parseJsonText(text).is_discarded(); }

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

TEST_CASE("valid texts pass, and the parser agrees") {
  const std::vector<std::string> valid = {
      "0",
      "-0",
      "12",
      "-3.25e+10",
      "1E-2",
      "0.5",
      "true",
      "false",
      "null",
      "\"\"",
      " \t\r\n{ \"a\" : [ 1 , {\"b\":null} ] , \"c\":{} } \n",
      "[]",
      "{}",
      "[[],[[]]]",
      R"("\" \\ \/ \b \f \n \r \t \u00e9 \u0000 \uD83D\uDE00")",
      "\"caf\xC3\xA9 \xF0\x9F\x98\x80\"",
      "\"\x7F\"",
      "1e-400",                            // underflows to 0: finite, accepted
      "1" + std::string(308, '0'),         // 1e308: finite
      "-" + std::string(300, '9') + ".5",  // long, still finite
  };
  for (const std::string& text : valid) {
    INFO(text);
    CHECK(isJsonText(text));
    CHECK(parses(text));
  }
}

TEST_CASE("invalid texts fail, and the parser agrees") {
  const std::vector<std::string> invalid = {
      "",
      " ",
      "01",
      "-",
      "+1",
      ".5",
      "1.",
      "1e",
      "1e+",
      "0x10",
      "NaN",
      "Infinity",
      "tru",
      "nul",
      "truex",
      "[1,]",
      "{\"a\":1,}",
      "{a:1}",
      "{\"a\" 1}",
      "[1 2]",
      "{} {}",
      "[",
      "]",
      "{\"a\":}",
      "\"open",
      "'x'",
      "\"tab\there\"",
      "\"line\nbreak\"",
      std::string("\"a\0b\"", 5),
      std::string("{}\0", 3),
      std::string("\0", 1),
      R"("\x")",
      R"("\u12")",
      R"("\u12G4")",
      R"("\uD83D")",        // a high surrogate alone
      R"("\uDE00")",        // a low surrogate alone
      R"("\uD83D\u0041")",  // a high surrogate before a non-low one
      R"("\uD83Dx")",
      "\"\xC0\x80\"",          // overlong NUL
      "\"\xED\xA0\x80\"",      // a surrogate in UTF-8
      "\"\xF4\x90\x80\x80\"",  // past U+10FFFF
      "\"\xC3\"",              // cut short
      "\xC3\xA9",              // UTF-8 outside a string
      "1e400",
      "-1e400",               // overflow to infinity
      std::string(400, '9'),  // an integer no double holds
      std::string(400, '9') + ".5",
  };
  for (const std::string& text : invalid) {
    INFO(text);
    CHECK_FALSE(isJsonText(text));
    CHECK_FALSE(parses(text));
  }
}

TEST_CASE("kMaxJsonDepth levels pass, one more does not, as parseJsonText") {
  CHECK(isJsonText(nested(kMaxJsonDepth)));
  CHECK(parses(nested(kMaxJsonDepth)));
  CHECK_FALSE(isJsonText(nested(kMaxJsonDepth + 1)));
  CHECK_FALSE(parses(nested(kMaxJsonDepth + 1)));
  CHECK_FALSE(isJsonText(std::string(100000, '[')));
}

TEST_CASE("a byte order mark is not skipped: the text is embedded as it is") {
  CHECK(parses("\xEF\xBB\xBF{}"));
  CHECK_FALSE(isJsonText("\xEF\xBB\xBF{}"));
}
