// The Slack message: the event's method, content type, time and size, and
// the body in a code block — pretty-printed JSON (keys in the sender's
// order), other text as is, nothing for empty or binary bodies, cut to 3500
// characters at a character boundary with a note. And what SlackTarget
// actually posts: {"text": <that message>} as application/json, checked on a
// loopback receiver.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/random.h"
#include "storage/events_db.h"
#include "targets/circuit_breaker.h"
#include "targets/http_client.h"
#include "targets/slack_target.h"
#include "net/ssrf_guard.h"
#include "tests/support/contains.h"
#include "tests/support/deliver_and_wait.h"
#include "tests/support/receiver.h"
#include "tests/support/static_resolver.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace std::chrono_literals;
using webhooker::EventPayload;
using webhooker::slackMessageText;
using webhooker::SlackTarget;
using webhooker::testing::contains;

constexpr const char* kReceivedAt = "2026-11-29T17:48:05.123Z";

EventPayload payload(std::string body, std::string contentType = "application/json",
                     std::string method = "POST") {
  EventPayload p;
  p.method = std::move(method);
  p.contentType = std::move(contentType);
  p.body = std::move(body);
  p.receivedAt = kReceivedAt;
  p.headers = {{"Content-Type", p.contentType}};
  return p;
}

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Strict UTF-8 check: nlohmann's default dump throws on invalid sequences.
bool validUtf8(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

size_t codePoints(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// What is between the opening "```\n" and the closing "\n```".
std::string codeBlock(const std::string& text) {
  const size_t open = text.find("```\n");
  const size_t close = text.rfind("\n```");
  if (open == std::string::npos || close == std::string::npos || close < open + 4) return "<none>";
  return text.substr(open + 4, close - open - 4);
}

std::string repeat(const std::string& unit, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += unit;
  return out;
}

void checkHeaderLine(const std::string& text, const EventPayload& p) {
  const std::string first = text.substr(0, text.find('\n'));
  CHECK(contains(first, p.method));
  CHECK(contains(first, p.contentType.empty() ? "(no content type)" : p.contentType));
  CHECK(contains(first, kReceivedAt));
  CHECK(contains(first, std::to_string(p.body.size()) + " bytes"));
}

}  // namespace

TEST_CASE("a JSON body is pretty-printed in a code block, keys in the sender's order") {
  const EventPayload p =
      payload(R"({"order":17,"items":["a","b"],"nested":{"ok":true,"z":null,"a":1.5}})");
  const std::string text = slackMessageText(p);
  checkHeaderLine(text, p);
  CHECK(codeBlock(text) ==
        "{\n"
        "  \"order\": 17,\n"
        "  \"items\": [\n"
        "    \"a\",\n"
        "    \"b\"\n"
        "  ],\n"
        "  \"nested\": {\n"
        "    \"ok\": true,\n"
        "    \"z\": null,\n"
        "    \"a\": 1.5\n"
        "  }\n"
        "}");
  CHECK(endsWith(text, "\n```"));
  CHECK_FALSE(contains(text, "cut"));
}

TEST_CASE("a JSON body is recognised whatever the content type says") {
  const std::string text = slackMessageText(payload(R"([1, 2])", "text/plain"));
  CHECK(codeBlock(text) == "[\n  1,\n  2\n]");
}

TEST_CASE("a non-JSON text body is shown as is") {
  SUBCASE("form data") {
    const EventPayload p =
        payload("name=ada&lang=c%2B%2B", "application/x-www-form-urlencoded");
    const std::string text = slackMessageText(p);
    checkHeaderLine(text, p);
    CHECK(codeBlock(text) == "name=ada&amp;lang=c%2B%2B");
  }
  SUBCASE("almost JSON, multi-line, with non-ASCII text") {
    const std::string body = "{not json\nline two: grüße ✓";
    const std::string text = slackMessageText(payload(body, "text/plain"));
    CHECK(codeBlock(text) == body);
  }
}

TEST_CASE("JSON numbers are shown as the sender wrote them, even beyond 64 bits") {
  const std::string body =
      R"({"id":123456789012345678901234567890,"max":18446744073709551616,)"
      R"("min":-9223372036854775809,"exact":0.10000000000000000000001,"e":2E+3,)"
      R"("list":[ 1 ,{}, [] ],"name":"caf\u00e9"})";
  CHECK(codeBlock(slackMessageText(payload(body))) ==
        "{\n"
        "  \"id\": 123456789012345678901234567890,\n"
        "  \"max\": 18446744073709551616,\n"
        "  \"min\": -9223372036854775809,\n"
        "  \"exact\": 0.10000000000000000000001,\n"
        "  \"e\": 2E+3,\n"
        "  \"list\": [\n"
        "    1,\n"
        "    {},\n"
        "    []\n"
        "  ],\n"
        "  \"name\": \"café\"\n"
        "}");
}

// Slack's mrkdwn: &, < and > are sent as entities everywhere; a backtick run
// inside the code block gets a zero-width space between its backticks.
TEST_CASE("what the sender wrote is shown, never read as Slack formatting") {
  constexpr const char* kZeroWidthSpace = "\u200B";
  const auto occurrences = [](const std::string& text, const std::string& part) {
    size_t n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  };
  SUBCASE("three backticks in the body cannot close the code block") {
    const std::string body = "before\n```\n*bold* <!channel>\n````` after";
    const std::string text = slackMessageText(payload(body, "text/plain"));
    CHECK(occurrences(text, "```") == 2);  // the block's own fences
    CHECK(occurrences(text, "``") == 4);  // two in each fence: none in the body
    std::string shown = codeBlock(text);
    for (size_t at; (at = shown.find(kZeroWidthSpace)) != std::string::npos;)
      shown.erase(at, std::string(kZeroWidthSpace).size());
    CHECK(shown == "before\n```\n*bold* &lt;!channel&gt;\n````` after");
  }
  SUBCASE("&, < and > become entities in the body, JSON included") {
    const std::string text =
        slackMessageText(payload(R"({"html":"<a href='x'>Tom & Jerry</a>"})"));
    CHECK(codeBlock(text) ==
          "{\n  \"html\": \"&lt;a href='x'&gt;Tom &amp; Jerry&lt;/a&gt;\"\n}");
  }
  SUBCASE("the sender's content type and method cannot leave their code span") {
    const EventPayload p = payload("{}", "text/plain; x=<!channel>`*loud*`", "PO`ST");
    const std::string text = slackMessageText(p);
    const std::string first = text.substr(0, text.find('\n'));
    CHECK(occurrences(first, "`") == 2);
    CHECK(contains(first, "&lt;!channel&gt;"));
    CHECK_FALSE(contains(first, "<!channel>"));
    CHECK(contains(first, "PO\u02CBST text/plain; x=&lt;!channel&gt;\u02CB*loud*\u02CB"));
  }
}

TEST_CASE("a JSON body nested 100,000 levels deep is shown as text, not pretty-printed") {
  // Pretty-printing would recurse once per level and overflow the stack.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string text = slackMessageText(payload(deep));
  // The raw text, cut: no line breaks or indentation from pretty-printing.
  CHECK(codeBlock(text) == std::string(SlackTarget::kMaxBodyChars, '[') + "\n…");
}

TEST_CASE("an empty body says so, with no code block") {
  const EventPayload p = payload("", "", "PUT");
  const std::string text = slackMessageText(p);
  checkHeaderLine(text, p);
  CHECK(contains(text, "0 bytes"));
  CHECK(contains(text, "(no content type)"));
  CHECK(contains(text, "empty body"));
  CHECK_FALSE(contains(text, "```"));
}

TEST_CASE("a binary body is not shown, and the message stays valid UTF-8") {
  const std::string body("\x00\x01\xff\xfe\x80zz\x00", 8);
  const EventPayload p = payload(body, "application/octet-stream");
  const std::string text = slackMessageText(p);
  checkHeaderLine(text, p);
  CHECK(contains(text, "8 bytes"));
  CHECK(contains(text, "binary body"));
  CHECK_FALSE(contains(text, "```"));
  CHECK_FALSE(contains(text, "zz"));
  CHECK(validUtf8(text));
}

TEST_CASE("JSON followed by a NUL byte is not JSON: the bytes after it are not dropped") {
  // Found by fuzz/slack_message_fuzzer: the parser alone stops at the NUL.
  const EventPayload binary = payload(std::string("{\"a\":1}\0\xff", 9));
  CHECK(contains(slackMessageText(binary), "binary body"));
  const EventPayload text = payload(std::string("{\"a\":1}\0tail", 12));
  CHECK(codeBlock(slackMessageText(text)) == std::string("{\"a\":1}\0tail", 12));
}

TEST_CASE("a long body is cut to 3500 characters with a note") {
  CHECK(SlackTarget::kMaxBodyChars == 3500);
  const std::string note = "_(body cut to 3500 characters)_";

  SUBCASE("ASCII") {
    const EventPayload p = payload(std::string(10000, 'x'), "text/plain");
    const std::string text = slackMessageText(p);
    checkHeaderLine(text, p);
    CHECK(contains(text, "10000 bytes"));
    CHECK(codeBlock(text) == std::string(3500, 'x') + "\n…");
    CHECK(endsWith(text, "```\n" + note));
  }
  SUBCASE("two-byte characters: 3500 characters, not 3500 bytes") {
    const std::string text = slackMessageText(payload(repeat("é", 10000), "text/plain"));
    CHECK(codeBlock(text) == repeat("é", 3500) + "\n…");
    CHECK(contains(text, note));
    CHECK(validUtf8(text));
  }
  SUBCASE("a cut that would fall inside a character moves to its start") {
    // 1 + 3499 three-byte characters, then more: byte 3500 is mid-character.
    const std::string body = "a" + repeat("€", 9999);
    const std::string text = slackMessageText(payload(body, "text/plain"));
    const std::string shown = codeBlock(text);
    CHECK(validUtf8(text));
    CHECK(shown == "a" + repeat("€", 3499) + "\n…");
    CHECK(codePoints(shown) == 3500 + 2);  // + "\n…"
  }
  SUBCASE("pretty-printed JSON longer than the limit is cut too") {
    nlohmann::json big = nlohmann::json::array();
    for (int i = 0; i < 2000; ++i) big.push_back(i);
    const std::string text = slackMessageText(payload(big.dump()));
    const std::string shown = codeBlock(text);
    CHECK(shown.rfind("[\n  0,\n  1,\n", 0) == 0);
    CHECK(codePoints(shown) == 3500 + 2);
    CHECK(contains(text, note));
  }
  SUBCASE("exactly 3500 characters is not cut") {
    const std::string text = slackMessageText(payload(repeat("ü", 3500), "text/plain"));
    CHECK(codeBlock(text) == repeat("ü", 3500));
    CHECK_FALSE(contains(text, "cut"));
  }
}

namespace {

// Keeps what the target asked to reschedule (nothing, on success).
class RecordingScheduler final : public webhooker::Scheduler {
 public:
  void scheduleRetry(webhooker::Task task, std::chrono::milliseconds delay) override {
    retries.emplace_back(std::move(task), delay);
  }
  std::vector<std::pair<webhooker::Task, std::chrono::milliseconds>> retries;
};

class CountingObserver final : public webhooker::AttemptObserver {
 public:
  void attempted(webhooker::TargetType, std::chrono::milliseconds) override { ++attempts; }
  void outcome(std::optional<webhooker::TargetType>, webhooker::DeliveryStatus status,
               std::optional<webhooker::FailureReason>) override {
    outcomes.emplace_back(statusWord(status));
  }
  int attempts = 0;
  std::vector<std::string> outcomes;
};

class MiddleRandom final : public webhooker::Random {
 public:
  double uniform(double low, double high) override { return (low + high) / 2; }
};

}  // namespace

TEST_CASE("SlackTarget posts {\"text\": message} as JSON to the webhook URL") {
  using namespace webhooker;
  testing::TempDir dir;
  testing::Receiver receiver;
  SystemClock clock;
  testing::StaticResolver resolver;
  SsrfGuard guard(resolver, Cidr::parseList("127.0.0.0/8").value());
  HttpClient client(guard, clock);
  CircuitBreakers breakers(clock);
  MiddleRandom random;
  SlackTarget slack(client, breakers, random, clock);

  auto db = EventsDb::open(dir / "events.db", DbOptions{}, clock);
  REQUIRE(db);
  InboundEvent event;
  event.entrypointId = "8b0e4a7e-2f4c-4d7b-9a55-1c2d3e4f5a6b";
  event.method = "POST";
  event.path = "/hooks/8b0e4a7e-2f4c-4d7b-9a55-1c2d3e4f5a6b";
  event.headers = {{"Content-Type", "application/json"}};
  event.contentType = "application/json";
  event.body = R"({"id":"evt_1","kind":"charge.succeeded"})";
  const std::string targetId = "5e0c9a61-1b7d-4f2e-a3c4-d5e6f7a8b9c0";
  auto stored = db.value()->ingest(event, {targetId}, 24h);
  REQUIRE(stored);
  REQUIRE(stored->deliveries.size() == 1);

  TargetRecord target;
  target.id = targetId;
  target.type = webhooker::TargetType::kSlack;
  target.configJson = nlohmann::json{{"webhook_url", receiver.url("/services/T000/B000/XXXX")}}.dump();
  EventPayload p{event.method, event.headers, event.contentType, event.body,
                       stored->receivedAt, std::nullopt};
  Task task;
  task.deliveryId = stored->deliveries[0].id;
  task.eventId = stored->eventId;
  task.targetId = targetId;
  task.targetType = webhooker::TargetType::kSlack;
  RecordingScheduler scheduler;
  CountingObserver observer;
  const DeliveryConfig config = readDeliveryConfig(target.type, target.configJson);
  testing::deliverAndWait(
      slack, DeliveryContext{*db.value(), target, config, p, scheduler, observer, {}}, task);

  REQUIRE(receiver.requestCount() == 1);
  const testing::ReceivedRequest request = receiver.requests()[0];
  CHECK(request.method == "POST");
  CHECK(request.path == "/services/T000/B000/XXXX");
  CHECK(request.header("Content-Type") == "application/json");
  const auto posted = nlohmann::json::parse(request.body, nullptr, false);
  REQUIRE(posted.is_object());
  CHECK(posted.size() == 1);
  REQUIRE(posted.contains("text"));
  CHECK(posted["text"] == slackMessageText(p));
  CHECK(contains(posted["text"].get<std::string>(), "\"kind\": \"charge.succeeded\""));
  // The original request's headers are not forwarded to Slack.
  CHECK(request.headerCount("Content-Type") == 1);

  CHECK(scheduler.retries.empty());
  CHECK(observer.attempts == 1);
  CHECK(observer.outcomes == std::vector<std::string>{"delivered"});
}
