// JSON pointers (RFC 6901): which texts are pointers, and replacing the value
// one names.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "base/json_pointer.h"

using nlohmann::ordered_json;
using webhooker::JsonPointer;
using webhooker::parseJsonPointer;
using webhooker::replaceAtPointer;

TEST_CASE("parseJsonPointer splits tokens and unescapes ~1 and ~0") {
  CHECK(parseJsonPointer("") == JsonPointer{});
  CHECK(parseJsonPointer("/") == JsonPointer{""});
  CHECK(parseJsonPointer("/user/email") == JsonPointer{"user", "email"});
  CHECK(parseJsonPointer("/items/0/sku") == JsonPointer{"items", "0", "sku"});
  CHECK(parseJsonPointer("/a~1b") == JsonPointer{"a/b"});
  CHECK(parseJsonPointer("/m~0n") == JsonPointer{"m~n"});
  // ~01 is "~1" literally: ~0 first, then a plain 1.
  CHECK(parseJsonPointer("/~01") == JsonPointer{"~1"});
  CHECK(parseJsonPointer("/a//b") == JsonPointer{"a", "", "b"});
  CHECK(parseJsonPointer("/ü/ 空白 ") == JsonPointer{"ü", " 空白 "});
}

TEST_CASE("parseJsonPointer refuses what RFC 6901 does not allow") {
  for (const char* bad : {"a", "user/email", "#/a", "/~", "/a~", "/~2", "/~a", "/a~/b", " /a"}) {
    CAPTURE(bad);
    CHECK_FALSE(parseJsonPointer(bad).has_value());
  }
}

TEST_CASE("replaceAtPointer replaces members, array elements and the whole document") {
  ordered_json doc = ordered_json::parse(
      R"({"user": {"email": "a@b.c", "name": "A"}, "items": [{"sku": "x"}, {"sku": "y"}]})");
  CHECK(replaceAtPointer(doc, *parseJsonPointer("/user/email"), "[masked]"));
  CHECK(replaceAtPointer(doc, *parseJsonPointer("/items/1/sku"), "[masked]"));
  CHECK(doc.dump() ==
        R"({"user":{"email":"[masked]","name":"A"},"items":[{"sku":"x"},{"sku":"[masked]"}]})");
  // A whole subtree goes at once.
  CHECK(replaceAtPointer(doc, *parseJsonPointer("/user"), "[masked]"));
  CHECK(doc.dump() == R"({"user":"[masked]","items":[{"sku":"x"},{"sku":"[masked]"}]})");
  CHECK(replaceAtPointer(doc, *parseJsonPointer(""), "[masked]"));
  CHECK(doc == "[masked]");
}

TEST_CASE("replaceAtPointer leaves the document alone when the pointer names nothing") {
  const ordered_json original =
      ordered_json::parse(R"({"a": {"b": 1}, "list": [10, 20], "s": "text", "n": null})");
  for (const char* pointer :
       {"/missing", "/a/missing", "/a/b/deeper", "/list/2", "/list/-", "/list/01", "/list/x",
        "/list/99999999999999999999", "/s/0", "/n/x"}) {
    CAPTURE(pointer);
    ordered_json doc = original;
    CHECK_FALSE(replaceAtPointer(doc, *parseJsonPointer(pointer), "[masked]"));
    CHECK(doc == original);
  }
}

TEST_CASE("replaceAtPointer on an array document and an object key that looks like an index") {
  ordered_json list = ordered_json::parse(R"([{"0": "zero-key"}, "second"])");
  CHECK(replaceAtPointer(list, *parseJsonPointer("/0/0"), "[masked]"));
  CHECK(replaceAtPointer(list, *parseJsonPointer("/1"), "[masked]"));
  CHECK(list.dump() == R"([{"0":"[masked]"},"[masked]"])");
}
