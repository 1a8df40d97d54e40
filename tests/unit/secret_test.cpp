// Secrets: random tokens, their SHA-256 hashes, constant-time comparison.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "base/secret.h"

using webhooker::constantTimeEquals;
using webhooker::newToken;
using webhooker::sha256Hex;

TEST_CASE("sha256Hex matches the FIPS 180-2 test vectors") {
  CHECK(sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST_CASE("sha256Hex hashes every byte, including NUL") {
  const std::string withNul("a\0b", 3);
  CHECK(sha256Hex(withNul) != sha256Hex("a"));
  CHECK(sha256Hex(withNul) != sha256Hex("ab"));
  CHECK(sha256Hex(withNul).size() == 64);
}

TEST_CASE("newToken is the prefix followed by lowercase hex of the requested bytes") {
  const std::string token = newToken("whk_");
  CHECK(token.size() == 4 + 64);
  CHECK(token.rfind("whk_", 0) == 0);
  for (char c : token.substr(4)) {
    CAPTURE(c);
    CHECK(((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')));
  }
  const std::string shortToken = newToken("x-", 5);
  CHECK(shortToken.size() == 2 + 10);
  CHECK(shortToken.rfind("x-", 0) == 0);
  CHECK(newToken("", 16).size() == 32);
}

TEST_CASE("newToken does not repeat") {
  std::set<std::string> seen;
  for (int i = 0; i < 500; ++i) seen.insert(newToken("whk_"));
  CHECK(seen.size() == 500);
}

TEST_CASE("constantTimeEquals compares contents and lengths") {
  CHECK(constantTimeEquals("", ""));
  CHECK(constantTimeEquals("secret-token", "secret-token"));
  CHECK_FALSE(constantTimeEquals("secret-token", "secret-tokeN"));
  CHECK_FALSE(constantTimeEquals("secret-token", "Secret-token"));
  CHECK_FALSE(constantTimeEquals("secret-token", "secret-toke"));
  CHECK_FALSE(constantTimeEquals("secret-toke", "secret-token"));
  CHECK_FALSE(constantTimeEquals("", "a"));
  CHECK(constantTimeEquals(std::string("a\0b", 3), std::string("a\0b", 3)));
  CHECK_FALSE(constantTimeEquals(std::string("a\0b", 3), std::string("a\0c", 3)));
  const std::string token = newToken("whk_");
  CHECK(constantTimeEquals(token, std::string(token)));
  CHECK(constantTimeEquals(sha256Hex(token), sha256Hex(token)));
}
