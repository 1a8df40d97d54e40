// Routing rules as pure functions: event-type rules and patterns, the jq
// input, the target routing fields and the token bucket; then the jq
// sandbox's bounds with real worker processes (this test executable again).
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/json_member.h"
#include "engine/token_bucket.h"
#include "routing/jq_sandbox.h"
#include "routing/routing_rules.h"
#include "tests/support/eventually.h"

namespace webhooker {

namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// Whether this process runs with ASan's runtime. Asked at run time: the test
// code is not instrumented in the sanitizer build, but the jq worker it
// starts is this executable, runtime included.
extern "C" __attribute__((weak)) void __asan_init();
const bool kSanitized = __asan_init != nullptr;

EventTypeRule rule(const json& value) { return parseEventTypeRule(value).value(); }

// The live jq workers of this process (their cmdline names them) and the
// nice value of each, from /proc/<pid>/stat.
std::map<pid_t, int> jqWorkerNices() {
  std::map<pid_t, int> nices;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string arg0;
    std::getline(cmdline, arg0, '\0');
    if (arg0 != "webhooker-jq") continue;
    std::ifstream statFile(entry.path() / "stat");
    const std::string stat((std::istreambuf_iterator<char>(statFile)), {});
    if (stat.rfind(')') == std::string::npos) continue;  // it just ended
    // After the command in parentheses: field 3 (state) onwards.
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::vector<std::string> f{std::istream_iterator<std::string>(fields), {}};
    if (f.size() < 17 || std::stoi(f[1]) != ::getpid()) continue;
    nices[std::stoi(name)] = std::stoi(f[16]);  // field 19: nice
  }
  return nices;
}

}  // namespace

TEST_CASE("the top-level string member is found by a scan that follows the structure") {
  const auto type = [](std::string_view text) { return topLevelStringMember(text, "type"); };
  CHECK(type(R"({"id":"e","data":{"type":"no","list":[1,{"type":"x"}],"s":"}]\"{"},"type":"paid"})") == "paid");
  CHECK(type(" \r\n\t{ \"type\" :\t\"spaced\" }") == "spaced");
  CHECK(type(R"({"type":"a\"b\u00e9\\"})") == "a\"b\xC3\xA9\\");
  CHECK(type(R"({"\u0074ype":"escaped key"})") == "escaped key");
  CHECK(type(R"({"types":"x","typ":"y","type":1,"type":null,"type":"third"})") == "third");
  CHECK(type("\xEF\xBB\xBF{\"type\":\"after a byte order mark\"}") == "after a byte order mark");
  CHECK(type(R"({"type":"first","type":"second"})") == "first");
  CHECK(type(R"({"type":"\ud800"})") == std::nullopt);  // a lone surrogate does not decode
  // Where the structure breaks before the member, there is none.
  CHECK(type(R"([{"type":"x"}])") == std::nullopt);
  CHECK(type(R"({"a":[}],"type":"x"})") == std::nullopt);
  CHECK(type(R"({"a" 1,"type":"x"})") == std::nullopt);
  CHECK(type(R"({"a":1 "type":"x"})") == std::nullopt);
  CHECK(type(R"({"a":,"type":"x"})") == std::nullopt);
  CHECK(type(R"({"a":"open,"type":"x"})") == std::nullopt);
  CHECK(type(R"({"a":"\\\"})") == std::nullopt);
  CHECK(type(R"({"type")") == std::nullopt);
  CHECK(type("") == std::nullopt);
  // Nesting counts from the top-level object, up to kMaxJsonDepth.
  const auto nestedThenType = [](int arrays) {
    return "{\"a\":" + std::string(arrays, '[') + std::string(arrays, ']') + ",\"type\":\"deep\"}";
  };
  CHECK(type(nestedThenType(127)) == "deep");
  CHECK(type(nestedThenType(128)) == std::nullopt);
}

TEST_CASE("the default event type: X-GitHub-Event, then the body's top-level type") {
  const EventTypeRule byDefault;
  CHECK(eventTypeWithoutJq(byDefault, {{"x-github-event", "push"}}, R"({"type":"x"})") == "push");
  CHECK(eventTypeWithoutJq(byDefault, {}, R"({"id":"evt_1","data":{"type":"no"},"type":"invoice.paid"})") ==
        "invoice.paid");
  CHECK(eventTypeWithoutJq(byDefault, {}, R"({"data":{"type":"nested"}})") == std::nullopt);
  CHECK(eventTypeWithoutJq(byDefault, {}, R"({"type":42})") == std::nullopt);
  CHECK(eventTypeWithoutJq(byDefault, {}, R"({"type":""})") == std::nullopt);
  CHECK(eventTypeWithoutJq(byDefault, {}, R"(["type","x"])") == std::nullopt);
  CHECK(eventTypeWithoutJq(byDefault, {}, "not json") == std::nullopt);
  CHECK(eventTypeWithoutJq(byDefault, {}, std::string("{\"type\":\"a\0b\"}", 14)) == std::nullopt);
  CHECK(eventTypeWithoutJq(byDefault, {}, R"({"type":"a\nb"})") == std::nullopt);  // control char
  CHECK(eventTypeWithoutJq(byDefault, {}, R"({"type":")" + std::string(256, 'a') + "\"}") ==
        std::nullopt);
  // A broken tail after the type does not matter: reading stops there.
  CHECK(eventTypeWithoutJq(byDefault, {}, R"({"type":"early", "rest": [)") == "early");
}

TEST_CASE("header and JSON pointer rules") {
  CHECK(eventTypeWithoutJq(rule({{"header", "X-Event"}}), {{"x-EVENT", "order.created"}}, "") ==
        "order.created");
  CHECK(eventTypeWithoutJq(rule({{"header", "X-Event"}}), {}, R"({"type":"t"})") == std::nullopt);
  const EventTypeRule pointer = rule({{"json_pointer", "/meta/kind"}});
  CHECK(eventTypeWithoutJq(pointer, {}, R"({"meta":{"kind":"a.b"}})") == "a.b");
  CHECK(eventTypeWithoutJq(pointer, {}, R"({"meta":{"kind":1}})") == std::nullopt);
  CHECK(eventTypeWithoutJq(rule({{"json_pointer", "/items/1"}}), {}, R"({"items":["x","y"]})") ==
        "y");
  CHECK(eventTypeWithoutJq(rule({{"json_pointer", "/items/01"}}), {}, R"({"items":["x","y"]})") ==
        std::nullopt);
}

TEST_CASE("event type rules are checked and shown as given") {
  CHECK(parseEventTypeRule(nullptr).value().source == EventTypeSource::kDefault);
  for (const json& bad : {json("X-GitHub-Event"), json{{"header", "Bad Name"}},
                          json{{"header", 1}}, json{{"json_pointer", "type"}},
                          json{{"jq", ""}}, json{{"regex", "x"}},
                          json{{"header", "A"}, {"jq", "."}}}) {
    const auto r = parseEventTypeRule(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == "invalid_event_type");
  }
  const EventTypeRule jq = rule({{"jq", ".body.kind"}});
  CHECK(eventTypeRuleJson(jq) == json{{"jq", ".body.kind"}});
  CHECK(storedEventTypeRule(eventTypeRuleText(jq)).expression == ".body.kind");
  CHECK(eventTypeRuleText(EventTypeRule{}).empty());
  CHECK(storedEventTypeRule("garbage").source == EventTypeSource::kDefault);
}

TEST_CASE("event type patterns: exact, prefix.* and *") {
  CHECK(isEventTypePattern("push"));
  CHECK(isEventTypePattern("invoice.*"));
  CHECK(isEventTypePattern("*"));
  CHECK_FALSE(isEventTypePattern("push*"));
  CHECK_FALSE(isEventTypePattern("*.paid"));
  CHECK_FALSE(isEventTypePattern(".*"));
  CHECK_FALSE(isEventTypePattern(""));
  CHECK(eventTypeMatches("invoice.*", std::string("invoice.paid")));
  CHECK(eventTypeMatches("invoice.*", std::string("invoice.payment.failed")));
  CHECK_FALSE(eventTypeMatches("invoice.*", std::string("invoice")));
  CHECK_FALSE(eventTypeMatches("invoice.*", std::string("invoices.paid")));
  CHECK_FALSE(eventTypeMatches("push", std::string("push.x")));
  CHECK(eventTypeMatches("*", std::nullopt));
  CHECK_FALSE(eventTypeMatches("push", std::nullopt));
}

TEST_CASE("the jq input: lower-case headers, repeated ones joined, body parsed or null") {
  const json input = json::parse(
      jqInput(std::string("push"), {{"X-A", "1"}, {"x-a", "2"}, {"Content-Type", "application/json"}},
              R"({"n":[1,2]})", "2026-01-01T00:00:00.000Z"));
  CHECK(input == json{{"event_type", "push"},
                      {"headers", {{"x-a", "1, 2"}, {"content-type", "application/json"}}},
                      {"body", {{"n", {1, 2}}}},
                      {"received_at", "2026-01-01T00:00:00.000Z"}});
  CHECK(json::parse(jqInput(std::nullopt, {}, "<xml/>", "t"))["body"].is_null());
  CHECK(json::parse(jqInput(std::nullopt, {}, "{\"a\":1} {\"b\":2}", "t"))["body"].is_null());
  CHECK(json::parse(jqInput(std::nullopt, {}, "", "t"))["body"].is_null());
  // Bytes that are not UTF-8 in a header still make valid JSON.
  CHECK_FALSE(json::parse(jqInput(std::nullopt, {{"X-Bin", "\xff\xfe"}}, "\xff", "t"), nullptr,
                          false)
                  .is_discarded());
  // A JSON body may start with a byte order mark (RFC 8259 lets a parser
  // ignore it); inside the input it would not be JSON.
  const json bom = json::parse(jqInput(std::nullopt, {}, "\xEF\xBB\xBF{\"n\":1}", "t"), nullptr, false);
  REQUIRE(bom.is_object());
  CHECK(bom["body"] == json{{"n", 1}});
  // One mark is skipped, not two: a second one would be inside the input.
  const json twice =
      json::parse(jqInput(std::nullopt, {}, "\xEF\xBB\xBF\xEF\xBB\xBF{}", "t"), nullptr, false);
  REQUIRE(twice.is_object());
  CHECK(twice["body"].is_null());
}

TEST_CASE("target routing fields: applied, refused with the field's name, shown back") {
  auto routing = applyTargetRouting({{"filter", {{"event_types", {"push", "pull_request.*"}},
                                                 {"jq", ".body.ok"}}},
                                     {"transform", {{"jq", "{ref: .body.ref}"}}},
                                     {"rate_limit", {{"per_second", 0.5}}}},
                                    {});
  REQUIRE(routing);
  CHECK(routing->eventTypes == std::vector<std::string>{"push", "pull_request.*"});
  CHECK(routing->ratePerSecond == 0.5);
  CHECK(storedTargetRouting(targetRoutingText(routing.value())) == routing.value());
  // null removes one part and keeps the others.
  auto cleared = applyTargetRouting({{"filter", nullptr}}, routing.value());
  REQUIRE(cleared);
  CHECK_FALSE(cleared->hasFilter());
  CHECK(cleared->transformJq == "{ref: .body.ref}");
  CHECK(targetRoutingJson(cleared.value())["filter"].is_null());

  const auto code = [](const json& body) {
    auto r = applyTargetRouting(body, {});
    return r ? std::string("ok") : r.error().code;
  };
  CHECK(code({{"filter", "push"}}) == "invalid_filter");
  CHECK(code({{"filter", {{"types", {"push"}}}}}) == "invalid_filter");
  CHECK(code({{"filter", {{"event_types", {"a b\x01"}}}}}) == "invalid_filter");
  CHECK(code({{"filter", {{"jq", std::string(20000, ' ')}}}}) == "invalid_filter");
  CHECK(code({{"transform", {{"jq", 1}}}}) == "invalid_transform");
  CHECK(code({{"transform", ".body"}}) == "invalid_transform");
  CHECK(code({{"rate_limit", {{"per_second", 0.001}}}}) == "invalid_rate_limit");
  CHECK(code({{"rate_limit", {{"per_second", 10001}}}}) == "invalid_rate_limit");
  CHECK(code({{"rate_limit", {{"per_second", "5"}}}}) == "invalid_rate_limit");
  CHECK(code({{"rate_limit", {{"per_second", 10000}}}}) == "ok");
}

TEST_CASE("a token bucket starts with one token and fills to max(1, rate)") {
  const TimePoint t0{};
  TokenBucket five(5, t0);
  CHECK(five.take(t0));
  CHECK_FALSE(five.take(t0));
  CHECK(five.nextTokenAt(t0) == t0 + 200ms);
  CHECK(five.take(t0 + 200ms));
  // Idle for a minute: a burst of five, not 300.
  int burst = 0;
  while (five.take(t0 + 60s)) ++burst;
  CHECK(burst == 5);
  TokenBucket slow(0.01, t0);
  CHECK(slow.take(t0));
  CHECK(slow.nextTokenAt(t0) == t0 + 100s);
  CHECK_FALSE(slow.take(t0 + 99s));
  CHECK(slow.take(t0 + 100s));
}

TEST_CASE("the jq sandbox: outputs, jq's errors, and runaway programs stopped at the budget") {
  JqSandboxOptions options;
  options.workers = 1;
  options.timeout = 100ms;
  options.memoryBytes = 512u * 1024 * 1024;
  auto sandbox = JqSandbox::start(options);
  REQUIRE(sandbox);
  JqSandbox& jq = *sandbox.value();

  CHECK(jq.run("{ref: .body.ref}", R"({"body":{"ref":"main"}})").value().texts ==
        std::vector<std::string>{R"({"ref":"main"})"});
  CHECK(jq.run(".[]", "[1,2,3,4]").value().texts == std::vector<std::string>{"1", "2"});
  CHECK(jq.run("empty", "null").value().texts.empty());
  const auto failed = jq.run(".a.b", R"({"a":"text"})");
  REQUIRE_FALSE(failed);
  CHECK(failed.error().code == error_code::kJqError);
  CHECK(failed.error().message.find("Cannot index string") != std::string::npos);
  const auto broken = jq.compile("{a: }");
  REQUIRE_FALSE(broken);
  CHECK(broken.error().message.find("syntax error") != std::string::npos);
  // A program's `env` sees nothing of the daemon's environment, and no
  // module can be read from disk.
  CHECK(jq.run("env | length", "null").value().texts == std::vector<std::string>{"0"});
  CHECK_FALSE(jq.compile("import \"etc/passwd\" as p; .") );

  for (const char* runaway : {"def f: f; f", "[range(1e9)]", "[limit(1e9; repeat(\"xxxxxxxx\"))]"}) {
    INFO(runaway);
    REQUIRE(jq.compile(runaway));  // they compile: only running them is unbounded
    const auto started = std::chrono::steady_clock::now();
    // Each its own webhook's: an overrun throttles the webhook it ran for.
    const auto r = jq.run(runaway, "null", runaway);
    const auto took = std::chrono::steady_clock::now() - started;
    REQUIRE_FALSE(r);
    CHECK((r.error().code == error_code::kJqTimeout || r.error().code == error_code::kJqMemory));
    CHECK(took < 1s);  // the budget plus scheduling, not the program's run
    // The one worker was replaced: the next call is answered.
    const auto next = jq.run(".", "1", "another webhook");
    REQUIRE(next);
    CHECK(next->texts == std::vector<std::string>{"1"});
  }
}

TEST_CASE("a webhook whose programs overran runs at nice 19, on a worker that then retires") {
  JqSandboxOptions options;
  options.workers = 1;
  options.timeout = 200ms;
  auto sandbox = JqSandbox::start(options);
  REQUIRE(sandbox);
  JqSandbox& jq = *sandbox.value();
  const char* runaway = "def f: f; f";
  // A call once it gets a worker: x's throttle is over, a retired worker's
  // replacement is up (refused "jq_busy" until then).
  const auto runWhenServed = [&](const char* program, const char* tenant) {
    Result<JqOutputs> r = makeError(error_code::kJqBusy, "not run");
    CHECK(testing::eventually([&] {
      r = jq.run(program, "null", tenant);
      return r || r.error().code != error_code::kJqBusy;
    }));
    return r;
  };

  REQUIRE(jq.run(runaway, "null", "x").error().code == error_code::kJqTimeout);  // a strike
  REQUIRE(runWhenServed(".", "y"));
  const auto before = jqWorkerNices();
  REQUIRE(before.size() == 1);
  CHECK(before.begin()->second == 0);  // another webhook's runs: full priority

  // x's clean run, still struck, ran at low priority: its worker retired.
  CHECK(runWhenServed(".", "x"));
  REQUIRE(runWhenServed(".", "y"));
  const auto after = jqWorkerNices();
  REQUIRE(after.size() == 1);
  CHECK(after.begin()->first != before.begin()->first);
  CHECK(after.begin()->second == 0);

  // The clean run took the strike away: x's next overrun is at full
  // priority, the one after it at nice 19, seen while it runs.
  REQUIRE(runWhenServed(runaway, "x").error().code == error_code::kJqTimeout);
  std::thread struckRun([&] { CHECK_FALSE(runWhenServed(runaway, "x")); });
  CHECK(testing::eventually([] {
    const auto nices = jqWorkerNices();
    return nices.size() == 1 && nices.begin()->second == kStruckNice;
  }));
  struckRun.join();
}

TEST_CASE("a memory budget stops an allocating program before its time budget") {
  // Under ASan the worker has no address-space limit (its shadow memory
  // alone exceeds any), and this program would take the machine's memory.
  if (kSanitized) return;
  JqSandboxOptions options;
  options.workers = 1;
  options.timeout = 10000ms;
  options.memoryBytes = 256u * 1024 * 1024;
  auto sandbox = JqSandbox::start(options);
  REQUIRE(sandbox);
  // A string that doubles until it is a terabyte: past 256 MiB within a
  // fraction of a second, however loaded the machine.
  const auto r = sandbox.value()->run("\"x\" | until(length > 1e12; . + .)", "null");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == error_code::kJqMemory);
}

}  // namespace webhooker
