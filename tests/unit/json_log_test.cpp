// --log-format json: jsonLogLine turns one "<event.name> key=value ..."
// message into one JSON object, {"time", "level", "event", <key>: <value>,
// ...}, every line valid JSON whatever the message holds. (That the daemon
// writes nothing else to stderr in that format is checked against the real
// binary in tests/integration/metrics_test.cpp.)
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "app/logging.h"

namespace webhooker::testing {
namespace {

using app::jsonLogLine;
using nlohmann::json;

constexpr const char* kTime = "2026-03-01T12:00:00.123Z";

json lineOf(const std::string& message, const std::string& level = "info") {
  const std::string line = jsonLogLine(kTime, level, message);
  INFO(line);
  REQUIRE(line.find('\n') == std::string::npos);  // one line, whatever the message
  return json::parse(line);
}

// The object's keys in the order they were written.
std::vector<std::string> keysOf(const std::string& line) {
  std::vector<std::string> keys;
  const nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(line);
  for (auto it = parsed.begin(); it != parsed.end(); ++it) keys.push_back(it.key());
  return keys;
}

}  // namespace

TEST_CASE("event name and key=value fields become one flat JSON object") {
  const std::string message = "delivery.delivered webhook_id=a delivery_id=b status_code=200";
  const json j = lineOf(message);
  CHECK(j == json{{"time", kTime},
                  {"level", "info"},
                  {"event", "delivery.delivered"},
                  {"webhook_id", "a"},
                  {"delivery_id", "b"},
                  {"status_code", 200}});
  // time, level and event first, then the fields in message order.
  CHECK(keysOf(jsonLogLine(kTime, "info", message)) ==
        std::vector<std::string>{"time", "level", "event", "webhook_id", "delivery_id",
                                 "status_code"});
  CHECK(lineOf("delivery.dead_lettered reason=max_attempts", "warning")["level"] == "warning");
}

TEST_CASE("quoted values keep their spaces and escaped quotes") {
  const json j = lineOf(
      R"x(delivery.attempt_failed delivery_id=d1 )x"
      R"x(error="connect to 10.0.0.1: \"refused\" (after 3 s)" retry_in_ms=2000)x");
  CHECK(j["event"] == "delivery.attempt_failed");
  CHECK(j["delivery_id"] == "d1");
  CHECK(j["error"] == R"x(connect to 10.0.0.1: "refused" (after 3 s))x");
  CHECK(j["retry_in_ms"] == 2000);
  CHECK_FALSE(j.contains("message"));

  CHECK(lineOf(R"(x.y empty="" path="C:\\dir")") == json{{"time", kTime},
                                                         {"level", "info"},
                                                         {"event", "x.y"},
                                                         {"empty", ""},
                                                         {"path", R"(C:\dir)"}});
  // What the log target writes: the body as a JSON string.
  CHECK(lineOf(R"(event.logged body="{\"order\":42,\"note\":\"a b\"}" size=30)")["body"] ==
        R"({"order":42,"note":"a b"})");
}

TEST_CASE("a value written as a JSON string keeps its newlines, tabs and \\u escapes") {
  // The log target writes the event body as a JSON string: a pretty-printed
  // body must come out as it went in, its \n escapes not turned into "n".
  const std::string body = "{\n  \"a\": \"tab\there\",\n  \"u\": \"\\u00e9 \u00e9\"\n}";
  const std::string message = "event.logged size=40 body=" + json(body).dump() + " tail=x";
  const json j = lineOf(message);
  CHECK(j["body"] == body);
  CHECK(j["size"] == 40);
  CHECK(j["tail"] == "x");
  CHECK_FALSE(j.contains("message"));
  // Control characters arrive as \u escapes.
  CHECK(lineOf("x.y v=" + json(std::string("a\x01b")).dump())["v"] == std::string("a\x01b"));
}

TEST_CASE("an unquoted number is a JSON number; a quoted one, an id or a version stays text") {
  const json j = lineOf(
      R"(x.y attempts=3 ratio=0.25 delta=-7 quoted="200" id=0123 version=1.2.3 hex=1e5 dot=5. port=)");
  CHECK(j["attempts"] == 3);
  CHECK(j["ratio"] == 0.25);
  CHECK(j["delta"] == -7);
  CHECK(j["quoted"] == "200");
  CHECK(j["id"] == "0123");
  CHECK(j["version"] == "1.2.3");
  CHECK(j["hex"] == "1e5");
  CHECK(j["dot"] == "5.");
  CHECK(j["port"] == "");
  // Past 15 digits a double would round it: kept as written.
  CHECK(lineOf("x.y big=12345678901234567890")["big"] == "12345678901234567890");
}

TEST_CASE("a message with no fields is just the event") {
  const json j = lineOf("daemon.stopped");
  CHECK(j == json{{"time", kTime}, {"level", "info"}, {"event", "daemon.stopped"}});
}

TEST_CASE("text that is not key=value goes to \"message\"") {
  CHECK(lineOf("daemon.started hello world") == json{{"time", kTime},
                                                     {"level", "info"},
                                                     {"event", "daemon.started"},
                                                     {"message", "hello world"}});
  const json j = lineOf("sampler.failed webhook_id=w1 then some free text a=b");
  CHECK(j["webhook_id"] == "w1");
  CHECK(j["message"] == "then some free text a=b");
  // An unterminated quote takes the rest of the line and still parses.
  CHECK(lineOf(R"(x.y error="never closed)")["error"] == "never closed");
}

TEST_CASE("fields cannot overwrite time, level or event") {
  const json j = lineOf("x.y time=forged level=error event=other");
  CHECK(j["time"] == kTime);
  CHECK(j["level"] == "info");
  CHECK(j["event"] == "x.y");
  CHECK(j["field_time"] == "forged");
  CHECK(j["field_level"] == "error");
  CHECK(j["field_event"] == "other");
}

TEST_CASE("whatever the message holds, the line is one valid JSON object") {
  for (const std::string& message :
       {std::string(""), std::string("   "), std::string("x.y a=\"line\nbreak\""),
        std::string("x.y bad=\xff\xfe utf8"), std::string("x.y ctl=\x01\x02"),
        std::string("x.y =novalue"), std::string("x.y a=\\\"\\"), std::string("x.y a=\"\\")}) {
    CAPTURE(message);
    const std::string line = jsonLogLine(kTime, "info", message);
    CHECK(line.find('\n') == std::string::npos);
    json j;
    REQUIRE_NOTHROW(j = json::parse(line));
    CHECK(j.is_object());
    CHECK(j["time"] == kTime);
    CHECK(j.contains("event"));
  }
}

}  // namespace webhooker::testing
