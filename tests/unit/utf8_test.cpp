// isValidUtf8: what may be shown as text (event views, Slack messages).
#include <doctest/doctest.h>

#include <string>

#include "base/utf8.h"

using webhooker::isValidUtf8;

TEST_CASE("well-formed UTF-8 of every length is valid") {
  CHECK(isValidUtf8(""));
  CHECK(isValidUtf8("plain ascii"));
  CHECK(isValidUtf8("caf\xC3\xA9"));                 // 2 bytes
  CHECK(isValidUtf8("\xE2\x98\x95"));                // 3 bytes
  CHECK(isValidUtf8("\xF0\x9F\x98\x80"));            // 4 bytes
  CHECK(isValidUtf8(std::string("a\0b", 3)));        // NUL is a character
  CHECK(isValidUtf8("\xF4\x8F\xBF\xBF"));            // U+10FFFF, the last
}

TEST_CASE("malformed sequences are not") {
  CHECK_FALSE(isValidUtf8("\xFF"));                  // never a lead byte
  CHECK_FALSE(isValidUtf8("\x80"));                  // continuation alone
  CHECK_FALSE(isValidUtf8("caf\xC3"));               // cut short at the end
  CHECK_FALSE(isValidUtf8("\xE2\x98"));              // cut short
  CHECK_FALSE(isValidUtf8("\xC3\x28"));              // bad continuation
  CHECK_FALSE(isValidUtf8("\xC0\xAF"));              // overlong '/'
  CHECK_FALSE(isValidUtf8("\xE0\x80\xAF"));          // overlong, 3 bytes
  CHECK_FALSE(isValidUtf8("\xED\xA0\x80"));          // a surrogate, U+D800
  CHECK_FALSE(isValidUtf8("\xF4\x90\x80\x80"));      // past U+10FFFF
}
