// Routing end to end, through the admin API and /hooks/<id> of the real
// server with real receivers: event types from an entrypoint's rule, target
// subscriptions (event types and jq filters), jq transforms signed over the
// body sent, the bounds of runaway programs, and per-target rate limits.
#include <doctest/doctest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "targets/webhook_signature.h"
#include "tests/support/engine_harness.h"
#include "tests/support/eventually.h"
#include "tests/support/receiver.h"

namespace webhooker::testing {

namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr const char* kSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

HarnessOptions withJq() {
  HarnessOptions o;
  o.jq = true;
  return o;
}

struct Answer {
  int status = 0;
  json body;
  std::string text;  // as sent, in its key order
};

// An admin API call with the harness's token.
Answer api(EngineHarness& h, const std::string& method, const std::string& path,
           const json& body = nullptr) {
  httplib::Client c("127.0.0.1", h.port());
  c.set_read_timeout(10s);
  const httplib::Headers auth = {
      {"Authorization", "Bearer " + std::string(EngineHarness::kToken)}};
  const std::string text = body.is_null() ? "" : body.dump();
  httplib::Result res = method == "POST"    ? c.Post(path, auth, text, "application/json")
                        : method == "PATCH" ? c.Patch(path, auth, text, "application/json")
                                            : c.Get(path, auth);
  REQUIRE(res);
  return {res->status, json::parse(res->body, nullptr, false), res->body};
}

std::string webhookPath(const Hook& hook) { return "/api/v1/webhooks/" + hook.webhookId; }

// A target made through the API (so its programs are compile-checked).
std::string createTarget(EngineHarness& h, const Hook& hook, json fields) {
  fields["name"] = fields.value("name", "target");
  fields["type"] = fields.value("type", "http");
  const Answer a = api(h, "POST", webhookPath(hook) + "/targets", fields);
  INFO(a.body.dump());
  REQUIRE(a.status == 201);
  return a.body["id"].get<std::string>();
}

json ingest(EngineHarness& h, const Hook& hook, const std::string& body,
            const httplib::Headers& headers = {}, const std::string& type = "application/json") {
  httplib::Client c("127.0.0.1", h.port());
  c.set_read_timeout(10s);
  auto res = c.Post("/hooks/" + hook.entrypointId, headers, body, type.c_str());
  REQUIRE(res);
  INFO(res->body);
  REQUIRE(res->status == 200);
  return json::parse(res->body);
}

constexpr const char* kPush =
    R"({"ref":"refs/heads/main","after":"9f1c","repository":{"full_name":"acme/api"}})";
constexpr const char* kIssues = R"({"action":"opened","issue":{"number":7}})";

}  // namespace

TEST_CASE("GitHub events by header: a push-only target gets {ref} signed, an open one both as sent") {
  EngineHarness h(withJq());
  Receiver pushOnly, everything;
  const Hook hook = h.createWebhook();
  const Answer rule = api(h, "PATCH", webhookPath(hook) + "/entrypoints/" + hook.entrypointId,
                          {{"event_type", {{"header", "X-GitHub-Event"}}}});
  REQUIRE(rule.status == 200);
  CHECK(rule.body["event_type"] == json{{"header", "X-GitHub-Event"}});

  const std::string subscribed = createTarget(
      h, hook,
      {{"config", {{"url", pushOnly.url("/push")}, {"signing_secret", kSecret}}},
       {"filter", {{"event_types", {"push"}}}},
       {"transform", {{"jq", "{ref: .body.ref}"}}}});
  const std::string open = createTarget(h, hook, {{"config", {{"url", everything.url("/all")}}}});

  const json pushed = ingest(h, hook, kPush, {{"X-GitHub-Event", "push"}});
  const json opened = ingest(h, hook, kIssues, {{"X-GitHub-Event", "issues"}});
  CHECK(pushed["deliveries"] == 2);
  CHECK(opened["deliveries"] == 1);  // only the open target matches

  REQUIRE(everything.waitForRequests(2, 10s));
  REQUIRE(pushOnly.waitForRequests(1, 10s));
  REQUIRE(h.waitForStatus(h.deliveryOf(hook.webhookId, pushed["event_id"], subscribed),
                          "delivered", 10s));
  std::this_thread::sleep_for(200ms);  // nothing more comes
  const auto pushes = pushOnly.requests();
  REQUIRE(pushes.size() == 1);
  CHECK(pushes[0].body == R"({"ref":"refs/heads/main"})");
  CHECK(pushes[0].header("Content-Type") == "application/json");
  // Signed over the body sent, not the body received.
  const std::string msgId = pushes[0].header("webhook-id");
  const int64_t timestamp = std::stoll(pushes[0].header("webhook-timestamp"));
  CHECK(pushes[0].header("webhook-signature") ==
        standardWebhookSignatureHeader({kSecret}, msgId, timestamp, pushes[0].body));

  const auto all = everything.requests();
  REQUIRE(all.size() == 2);
  std::vector<std::string> bodies = {all[0].body, all[1].body};
  std::sort(bodies.begin(), bodies.end());
  std::vector<std::string> sent = {kPush, kIssues};
  std::sort(sent.begin(), sent.end());
  CHECK(bodies == sent);  // byte for byte
  CHECK(h.deliveriesOf(hook.webhookId, subscribed).size() == 1);

  // The stored event keeps its body and has its type; the history filters by it.
  const Answer events = api(h, "GET", webhookPath(hook) + "/events?event_type=push");
  REQUIRE(events.status == 200);
  REQUIRE(events.body["events"].size() == 1);
  CHECK(events.body["events"][0]["event_type"] == "push");
  CHECK(events.body["events"][0]["id"] == pushed["event_id"]);
  const Answer shown = api(h, "GET", webhookPath(hook) + "/events/" +
                                         pushed["event_id"].get<std::string>());
  CHECK(shown.body["body"] == kPush);
  CHECK(api(h, "GET", webhookPath(hook) + "/deliveries?event_type=issues")
            .body["deliveries"]
            .size() == 1);
  CHECK(api(h, "GET", webhookPath(hook) + "/events?event_type=a*b").status == 400);

  const std::string metrics = [&] {
    httplib::Client c("127.0.0.1", h.port());
    return c.Get("/metrics")->body;
  }();
  CHECK(metrics.find("webhooker_events_filtered_total{target_type=\"http\"} 1") !=
        std::string::npos);
}

TEST_CASE("a transformed body goes without the headers that described the body received") {
  EngineHarness h(withJq());
  Receiver transformed, asSent;
  const Hook hook = h.createWebhook();
  createTarget(h, hook,
               {{"config", {{"url", transformed.url()}}}, {"transform", {{"jq", "{ref: .body.ref}"}}}});
  createTarget(h, hook, {{"config", {{"url", asSent.url()}}}});
  const std::vector<std::pair<std::string, std::string>> describing = {
      {"Content-Encoding", "identity"},
      {"Content-MD5", "Q2hlY2sgSW50ZWdyaXR5IQ=="},
      {"Digest", "sha-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE="}};
  httplib::Headers headers = {{"X-Tenant", "acme"}};
  for (const auto& [name, value] : describing) headers.emplace(name, value);
  ingest(h, hook, kPush, headers);

  REQUIRE(transformed.waitForRequests(1, 10s));
  REQUIRE(asSent.waitForRequests(1, 10s));
  const ReceivedRequest t = transformed.requests()[0];
  const ReceivedRequest a = asSent.requests()[0];
  CHECK(t.body == R"({"ref":"refs/heads/main"})");
  CHECK(t.header("Content-Type") == "application/json");
  CHECK(t.header("X-Tenant") == "acme");  // the others still go
  CHECK(a.body == kPush);
  for (const auto& [name, value] : describing) {
    const auto& header = name;  // clang 14: a lambda cannot name a binding
    CAPTURE(header);
    CHECK_FALSE(t.hasHeader(name));
    CHECK(a.header(name) == value);
  }
}

TEST_CASE("a slack target with a transform posts the program's output as the message itself") {
  EngineHarness h(withJq());
  Receiver transformed, described;
  const Hook hook = h.createWebhook();
  createTarget(h, hook,
               {{"type", "slack"},
                {"config", {{"webhook_url", transformed.url("/services/T000/B000/XXXX")}}},
                {"transform", {{"jq", R"jq({text: "push to \(.body.repository.full_name)"})jq"}}}});
  createTarget(h, hook,
               {{"type", "slack"},
                {"config", {{"webhook_url", described.url("/services/T000/B000/YYYY")}}}});

  ingest(h, hook, kPush);
  REQUIRE(transformed.waitForRequests(1, 10s));
  REQUIRE(described.waitForRequests(1, 10s));
  CHECK(transformed.requests()[0].body == R"({"text":"push to acme/api"})");
  // Without a transform the message describes the event as received.
  const json posted = json::parse(described.requests()[0].body, nullptr, false);
  REQUIRE(posted.is_object());
  CHECK(posted["text"].get<std::string>().find("\"full_name\": \"acme/api\"") != std::string::npos);
}

TEST_CASE("the default rule types by X-GitHub-Event, then the JSON body's type; a prefix matches") {
  EngineHarness h(withJq());
  Receiver invoices;
  const Hook hook = h.createWebhook();
  const std::string target =
      createTarget(h, hook, {{"config", {{"url", invoices.url()}}},
                             {"filter", {{"event_types", {"invoice.*"}}}}});
  CHECK(ingest(h, hook, R"({"type":"invoice.paid","data":{"object":{"id":"in_1"}}})")
            ["deliveries"] == 1);
  CHECK(ingest(h, hook, R"({"type":"customer.created"})")["deliveries"] == 0);
  CHECK(ingest(h, hook, R"({"data":{"type":"invoice.paid"}})")["deliveries"] == 0);  // not top-level
  CHECK(ingest(h, hook, "invoice.paid", {}, "text/plain")["deliveries"] == 0);
  REQUIRE(invoices.waitForRequests(1, 10s));
  const Answer events = api(h, "GET", webhookPath(hook) + "/events?event_type=invoice.*");
  REQUIRE(events.body["events"].size() == 1);
  CHECK(events.body["events"][0]["event_type"] == "invoice.paid");
  CHECK(h.deliveriesOf(hook.webhookId, target).size() == 1);
}

TEST_CASE("a jq filter and a non-JSON body: jq sees body null and the headers in lower case") {
  EngineHarness h(withJq());
  Receiver r;
  const Hook hook = h.createWebhook();
  createTarget(h, hook,
               {{"config", {{"url", r.url()}}},
                {"filter", {{"jq", ".headers[\"x-tenant\"] == \"acme\""}}},
                {"transform",
                 {{"jq", "{body, tenant: .headers[\"x-tenant\"], type: .event_type}"}}}});
  CHECK(ingest(h, hook, "plain <text>", {{"X-Tenant", "acme"}}, "text/plain")["deliveries"] == 1);
  CHECK(ingest(h, hook, "plain <text>", {{"X-Tenant", "other"}}, "text/plain")["deliveries"] ==
        0);
  REQUIRE(r.waitForRequests(1, 10s));
  CHECK(json::parse(r.requests()[0].body) ==
        json{{"body", nullptr}, {"tenant", "acme"}, {"type", nullptr}});
}

TEST_CASE("a jq filter passes on any output but null and false") {
  EngineHarness h(withJq());
  Receiver r;
  const Hook hook = h.createWebhook();
  createTarget(h, hook, {{"config", {{"url", r.url()}}}, {"filter", {{"jq", ".body.ref"}}}});
  CHECK(ingest(h, hook, R"({"other":1})")["deliveries"] == 0);  // null
  CHECK(ingest(h, hook, R"({"ref":false})")["deliveries"] == 0);
  CHECK(ingest(h, hook, R"({"ref":0})")["deliveries"] == 1);  // jq's truth, not C's
  CHECK(ingest(h, hook, R"({"ref":"refs/heads/main"})")["deliveries"] == 1);
  REQUIRE(r.waitForRequests(2, 10s));
}

TEST_CASE("programs are compiled when saved: jq's message in a 400, nothing saved") {
  EngineHarness h(withJq());
  const Hook hook = h.createWebhook();
  const std::string target = createTarget(h, hook, {{"config", {{"url", "http://127.0.0.1:9/"}}}});
  const std::string path = webhookPath(hook) + "/targets/" + target;

  Answer a = api(h, "PATCH", path, {{"filter", {{"jq", ".body | "}}}});
  CHECK(a.status == 400);
  CHECK(a.body["error"]["code"] == "invalid_filter");
  CHECK(a.body["error"]["message"].get<std::string>().find("syntax error") != std::string::npos);
  a = api(h, "PATCH", path, {{"transform", {{"jq", "{a: nosuchfunction}"}}}});
  CHECK(a.status == 400);
  CHECK(a.body["error"]["code"] == "invalid_transform");
  CHECK(a.body["error"]["message"].get<std::string>().find("nosuchfunction") != std::string::npos);
  a = api(h, "PATCH", path, {{"rate_limit", {{"per_second", 0}}}});
  CHECK(a.body["error"]["code"] == "invalid_rate_limit");
  a = api(h, "PATCH", path, {{"filter", {{"event_types", {"push*"}}}}});
  CHECK(a.body["error"]["code"] == "invalid_filter");
  a = api(h, "PATCH", webhookPath(hook) + "/entrypoints/" + hook.entrypointId,
          {{"event_type", {{"jq", "if"}}}});
  CHECK(a.status == 400);
  CHECK(a.body["error"]["code"] == "invalid_event_type");
  a = api(h, "PATCH", webhookPath(hook) + "/entrypoints/" + hook.entrypointId,
          {{"event_type", {{"header", "Bad Header"}}}});
  CHECK(a.body["error"]["code"] == "invalid_event_type");

  const Answer shown = api(h, "GET", path);
  CHECK(shown.body["filter"].is_null());
  CHECK(shown.body["transform"].is_null());
  CHECK(shown.body["rate_limit"].is_null());
  CHECK(api(h, "GET", webhookPath(hook)).body["entrypoints"][0]["event_type"].is_null());
}

TEST_CASE("runaway programs: `def f: f; f` and `[range(1e9)]` cost their budget, not a thread") {
  EngineHarness h(withJq());
  Receiver plain, looped, hungry;
  const Hook hook = h.createWebhook();
  const std::string plainTarget = createTarget(h, hook, {{"config", {{"url", plain.url()}}}});
  // Both compile, so both are saved.
  createTarget(h, hook, {{"config", {{"url", looped.url()}}}, {"filter", {{"jq", "def f: f; f"}}}});
  const std::string hungryTarget = createTarget(
      h, hook, {{"config", {{"url", hungry.url()}}}, {"transform", {{"jq", "[range(1e9)]"}}}});

  const auto started = std::chrono::steady_clock::now();
  const json answer = ingest(h, hook, R"({"n":1})");
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(answer["deliveries"] == 2);  // the looping filter counts as no match
  CHECK(took < 2s);                  // one budget (100 ms), plus the commit

  const DeliveryRef failed = h.deliveryOf(hook.webhookId, answer["event_id"], hungryTarget);
  REQUIRE(h.waitForStatus(failed, "failed", 10s));
  CHECK(h.delivery(failed).failureReason == "transform_failed");
  const auto results = h.resultRows(failed);
  REQUIRE(results.size() == 1);  // no retry: the program is deterministic
  REQUIRE(results[0].error);
  CHECK((results[0].error->find("time budget") != std::string::npos ||
         results[0].error->find("memory") != std::string::npos));
  REQUIRE(plain.waitForRequests(1, 10s));
  CHECK(looped.requestCount() == 0);
  CHECK(hungry.requestCount() == 0);

  // The killed workers were replaced: programs still run. The webhook's own
  // overruns throttle it a while (503 routing_busy, Retry-After), then its
  // next event gets its verdict again.
  json again;
  REQUIRE(eventually(
      [&] {
        httplib::Client c("127.0.0.1", h.port());
        auto res = c.Post("/hooks/" + hook.entrypointId, R"({"n":2})", "application/json");
        if (!res || res->status != 200) return false;
        again = json::parse(res->body);
        return true;
      },
      10s));
  CHECK(again["deliveries"] == 2);
  REQUIRE(plain.waitForRequests(2, 10s));
  CHECK(h.jqSandbox().run(".n + 1", R"({"n":1})").value().texts == std::vector<std::string>{"2"});
}

TEST_CASE("the preview shows a transform's body in jq's key order, as the receiver gets it") {
  EngineHarness h(withJq());
  Receiver r;
  const Hook hook = h.createWebhook();
  const std::string target = createTarget(
      h, hook, {{"config", {{"url", r.url()}}}, {"transform", {{"jq", "{zeta: .body.n, alpha: 1}"}}}});
  const json answer = ingest(h, hook, R"({"n":7})");
  REQUIRE(r.waitForRequests(1, 10s));
  CHECK(r.requests()[0].body == R"({"zeta":7,"alpha":1})");
  const Answer preview = api(h, "POST", webhookPath(hook) + "/targets/" + target + "/preview",
                             {{"event_id", answer["event_id"]}});
  REQUIRE(preview.status == 200);
  CHECK(preview.text.find(R"("body":{"zeta":7,"alpha":1})") != std::string::npos);
}

TEST_CASE("a failed transform ends the delivery at once; retry after the fix delivers") {
  EngineHarness h(withJq());
  Receiver r;
  const Hook hook = h.createWebhook();
  const std::string target = createTarget(
      h, hook, {{"config", {{"url", r.url()}}}, {"transform", {{"jq", ".body.items[]"}}}});
  const json answer = ingest(h, hook, R"({"items":[1,2]})");
  const DeliveryRef d = h.deliveryOf(hook.webhookId, answer["event_id"], target);
  REQUIRE(h.waitForStatus(d, "failed", 10s));
  CHECK(h.delivery(d).failureReason == "transform_failed");
  CHECK(h.resultRows(d).at(0).error == "the transform gave several outputs");

  // The preview shows the same, then the fixed program's output.
  const std::string targetPath = webhookPath(hook) + "/targets/" + target;
  Answer preview = api(h, "POST", targetPath + "/preview", {{"event_id", answer["event_id"]}});
  REQUIRE(preview.status == 200);
  CHECK(preview.body["matched"] == true);
  CHECK(preview.body["transform_error"] == "the transform gave several outputs");
  REQUIRE(api(h, "PATCH", targetPath, {{"transform", {{"jq", "{items: [.body.items[]]}"}}}})
              .status == 200);
  preview = api(h, "POST", targetPath + "/preview", {{"event_id", answer["event_id"]}});
  CHECK(preview.body["body"] == json{{"items", {1, 2}}});
  CHECK(api(h, "POST", targetPath + "/preview", {{"event_id", "nope"}}).status == 404);

  REQUIRE(api(h, "POST", webhookPath(hook) + "/deliveries/" + d.id + "/retry").status == 200);
  REQUIRE(r.waitForRequests(1, 10s));
  CHECK(r.requests()[0].body == R"({"items":[1,2]})");
  REQUIRE(h.waitForStatus(d, "delivered", 10s));
}

TEST_CASE("a rate limit spreads 20 deliveries over 3.5 s while another target drains at once") {
  EngineHarness h(withJq());
  Receiver limited, free;
  const Hook hook = h.createWebhook();
  const std::string limitedTarget = createTarget(
      h, hook, {{"config", {{"url", limited.url()}}}, {"rate_limit", {{"per_second", 5}}}});
  CHECK(api(h, "GET", webhookPath(hook) + "/targets/" + limitedTarget).body["rate_limit"] ==
        json{{"per_second", 5.0}});
  createTarget(h, hook, {{"config", {{"url", free.url()}}}});

  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) ingest(h, hook, json{{"n", i}}.dump());
  REQUIRE(free.waitForRequests(20, 10s));
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  REQUIRE(limited.waitForRequests(20, 10s));
  const auto requests = limited.requests();
  const auto span = requests.back().at - requests.front().at;
  CHECK(span >= 3500ms);
  CHECK(span < 5s);
  // Never failed, no attempt wasted: one attempt each.
  REQUIRE(h.waitForCount(hook.webhookId, limitedTarget, "delivered", 20, 5s));
  for (const DeliveryRow& d : h.deliveriesOf(hook.webhookId, limitedTarget)) CHECK(d.attempts == 1);
}

TEST_CASE("after a restart, the pending deliveries of a rate-limited target keep its rate") {
  HarnessOptions options = withJq();
  options.startEngine = false;  // as if the daemon had stopped with a backlog
  EngineHarness h(options);
  Receiver r;
  const Hook hook = h.createWebhook();
  TargetRecord target = h.createHttpTarget(hook.webhookId, r.url());
  target.routingJson = json{{"rate_limit", {{"per_second", 5}}}}.dump();
  REQUIRE(h.store().updateTarget(target));
  for (int i = 0; i < 6; ++i) {
    InboundEvent event;
    event.entrypointId = hook.entrypointId;
    event.method = "POST";
    event.path = "/hooks/" + hook.entrypointId;
    event.body = json{{"n", i}}.dump();
    h.ingestDirect(hook.webhookId, event, {target.id}, /*submit=*/false);
  }
  h.startEngine();  // recovery queues the six pending deliveries
  REQUIRE(r.waitForRequests(6, 10s));
  const auto requests = r.requests();
  CHECK(requests.back().at - requests.front().at >= 950ms);  // 1 at once, then one per 200 ms
  REQUIRE(h.waitForCount(hook.webhookId, target.id, "delivered", 6, 5s));
}


TEST_CASE("jq reads no file: import and include are refused, input and debug have an answer") {
  EngineHarness h(withJq());
  const Hook hook = h.createWebhook();
  const std::filesystem::path dir = h.dataDir() / "modules";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "secret.json") << R"({"token":"s3cr3t-file"})";
  std::ofstream(dir / "lib.jq") << R"(def leak: "s3cr3t-file";)";
  const std::string d = dir.string();
  const std::vector<std::string> programs = {
      "import \"" + d + "/secret\" as $s; $s", "include \"lib\" {search: \"" + d + "\"}; leak",
      "import \"lib\" as l {search: \"" + d + "\"}; l::leak",
      "module {search: \"" + d + "\"}; include \"lib\"; leak", "include \"lib\"; leak"};
  for (const std::string& program : programs) {
    INFO(program);
    const Answer a = api(h, "POST", webhookPath(hook) + "/targets",
                         {{"name", "t"}, {"type", "log"}, {"transform", {{"jq", program}}}});
    REQUIRE(a.status == 400);
    CHECK(a.body["error"]["code"] == "invalid_transform");
    CHECK(a.body.dump().find("read no file") != std::string::npos);
    CHECK(a.body.dump().find("s3cr3t") == std::string::npos);
    const auto ran = h.jqSandbox().run(program, "null");
    REQUIRE_FALSE(ran);
    CHECK(ran.error().code == error_code::kJqError);
  }
  // A module's metadata is not read either.
  const auto meta = h.jqSandbox().run("\"" + d + "/lib\" | modulemeta", "null");
  CHECK((!meta || meta->texts.at(0).find("s3cr3t") == std::string::npos));

  // One event is a program's only input; debug and stderr pass it through.
  JqSandbox& jq = h.jqSandbox();
  const auto input = jq.run("input", "1");
  REQUIRE_FALSE(input);
  CHECK(input.error().code == error_code::kJqError);
  CHECK(input.error().message == "input: a program sees one event, there is no other input");
  CHECK(jq.run("[inputs]", "1").value().texts == std::vector<std::string>{"[]"});
  CHECK(jq.run("[debug, stderr, input_filename, $__loc__.line]", "1").value().texts ==
        std::vector<std::string>{"[1,1,null,1]"});
  const auto halted = jq.run("\"stop\" | halt_error", "1");
  REQUIRE_FALSE(halted);
  CHECK(halted.error().message == "halt_error: stop");
  // None of them cost a worker: each gave jq's own kind of answer above.
  CHECK(jq.run(".n", R"({"n":3})").value().texts == std::vector<std::string>{"3"});
}

TEST_CASE("a webhook whose filter keeps overrunning is throttled with 503s; another keeps its verdicts") {
  EngineHarness h(withJq());
  Receiver hostileReceiver, fairReceiver;
  const Hook hostile = h.createWebhook("hostile");
  const Hook fair = h.createWebhook("fair");
  createTarget(h, hostile,
               {{"config", {{"url", hostileReceiver.url()}}}, {"filter", {{"jq", "def f: f; f"}}}});
  createTarget(h, fair, {{"config", {{"url", fairReceiver.url()}}}, {"filter", {{"jq", ".body.n > 0"}}}});

  std::atomic<bool> stop{false};
  std::atomic<int> stored{0}, refused{0}, otherAnswers{0};
  std::vector<std::thread> senders;
  for (int i = 0; i < 6; ++i) {
    senders.emplace_back([&] {
      httplib::Client c("127.0.0.1", h.port());
      c.set_read_timeout(10s);
      while (!stop) {
        auto res = c.Post("/hooks/" + hostile.entrypointId, R"({"n":1})", "application/json");
        if (res && res->status == 200 && json::parse(res->body)["deliveries"] == 0) ++stored;
        else if (res && res->status == 503 && res->get_header_value("Retry-After") == "1" &&
                 json::parse(res->body)["error"]["code"] == "routing_busy")
          ++refused;
        else ++otherAnswers;
      }
    });
  }
  // Every event of the other webhook gets its own filter's verdict.
  int verdicts = 0;
  for (int n = 1; n <= 15; ++n) {
    httplib::Client c("127.0.0.1", h.port());
    c.set_read_timeout(10s);
    auto res = c.Post("/hooks/" + fair.entrypointId, "{\"n\":" + std::to_string(n) + "}",
                      "application/json");
    if (res && res->status == 200 && json::parse(res->body)["deliveries"] == 1) ++verdicts;
  }
  const bool throttled = eventually([&] { return refused > 0; }, 10s);
  stop = true;
  for (auto& t : senders) t.join();
  REQUIRE(throttled);
  CHECK(verdicts == 15);
  CHECK(otherAnswers == 0);
  // A refused event was not stored: the hostile webhook holds only what got a verdict.
  SQLite::Database db = openReadOnly(h.eventsDbPath(hostile.webhookId));
  CHECK(db.execAndGet("SELECT COUNT(*) FROM events").getInt() == stored.load());
  CHECK(hostileReceiver.requestCount() == 0);
  REQUIRE(fairReceiver.waitForRequests(15, 10s));
}

TEST_CASE("a transform its webhook's throttle keeps from running is put off, never failed for it") {
  EngineHarness h(withJq());
  Receiver r;
  const Hook hook = h.createWebhook();
  const std::string target = createTarget(
      h, hook, {{"config", {{"url", r.url()}}}, {"transform", {{"jq", "def f: f; f"}}}});
  std::vector<std::string> events;
  for (int i = 0; i < 4; ++i) events.push_back(ingest(h, hook, R"({"n":1})")["event_id"]);
  // The first overrun throttles the webhook (0.1, 0.4, then 1.6 s): the
  // engine's calls refused meanwhile come back later instead of failing.
  REQUIRE(h.waitForCount(hook.webhookId, target, "failed", 4, 30s));
  for (const std::string& id : events) {
    const DeliveryRef d = h.deliveryOf(hook.webhookId, id, target);
    CHECK(h.delivery(d).failureReason == "transform_failed");
    const auto rows = h.resultRows(d);
    REQUIRE(rows.size() == 1);  // each failed on its own budget, once
    REQUIRE(rows[0].error);
    CHECK((rows[0].error->find("time budget") != std::string::npos ||
           rows[0].error->find("memory") != std::string::npos));
  }
  CHECK(r.requestCount() == 0);
}

}  // namespace webhooker::testing
