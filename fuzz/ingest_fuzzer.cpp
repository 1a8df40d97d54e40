// The ingest request path: IngestHandler::handle, as the HTTP server calls it
// for POST /hooks/<id>, on a real MainStore and events DB in a temp folder.
// Each input is one to three requests (entrypoint, query, headers, body, and
// optionally a genuine signature), then the events DB is emptied again.
//
// The webhook has entrypoints without verification, with each scheme, and
// one deactivated; two active targets and one inactive. For every request
// the expected answer is worked out independently and must be the answer:
//  - unknown or malformed entrypoint 404, body over the limit 413, inactive
//    410, a signature that does not verify 401 (a made-up one never does), a
//    bad idempotency key 400, else 200 — never a 503 (the storage is fine),
//    never a 2xx for anything refused;
//  - errors have the JSON error shape and change nothing: no row, no task;
//  - a 200 stored exactly the request (body byte for byte, every header in
//    order, query, key) and handed one task per active target over, unless
//    its idempotency key was seen before: then the first event's id, and
//    nothing new. On a GitHub entrypoint X-GitHub-Delivery is the key, on a
//    Stripe one the signed event's "id"; else Idempotency-Key or webhook-id.
#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>
#include <strings.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/json_depth.h"
#include "base/uuid.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/genuine_signature.h"
#include "server/ingest_handler.h"
#include "server/stored_headers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_server.h"

namespace {

using nlohmann::json;
using webhooker::fuzz::HeaderPairs;

constexpr size_t kBodyLimit = 2048;
constexpr const char* kHeaderNames[] = {"Idempotency-Key",     "idempotency-key",
                                        "webhook-id",          "Content-Type",
                                        "webhook-timestamp",   "webhook-signature",
                                        "X-Hub-Signature-256", "Stripe-Signature",
                                        "REMOTE_ADDR",         "Host",
                                        "Authorization",       "cookie",
                                        "X-GitHub-Delivery"};

struct Entrypoint {
  std::string id;
  std::string scheme;
  std::string secret;
  bool active = true;
};

// Built once; every input leaves the events DB empty again.
struct Fixture {
  webhooker::testing::TempDir dir;
  webhooker::SystemClock clock;
  std::unique_ptr<webhooker::MainStore> store;
  std::unique_ptr<webhooker::EventsDbPool> eventsDbs;
  webhooker::testing::RecordingDispatcher dispatcher;
  prometheus::Registry registry;
  webhooker::server::ServerMetrics metrics{registry};
  std::unique_ptr<webhooker::server::MoveFence> moveFence;
  std::unique_ptr<webhooker::server::IngestHandler> handler;
  std::vector<Entrypoint> entrypoints;
  size_t activeTargets = 0;
  std::unique_ptr<SQLite::Database> db;  // our own connection, to check and to empty

  Fixture() {
    webhooker::DbOptions options;
    options.sync = webhooker::SyncMode::kNormal;  // speed; durability is not the question here
    store = std::move(webhooker::MainStore::open(dir / "webhooker.db", options, clock).value());
    eventsDbs = std::make_unique<webhooker::EventsDbPool>(dir.path(), options, clock);
    moveFence = std::make_unique<webhooker::server::MoveFence>(*store);
    handler = std::make_unique<webhooker::server::IngestHandler>(
        *store, *eventsDbs, dispatcher, metrics, *moveFence,
        webhooker::server::IngestOptions{kBodyLimit, std::chrono::hours(24)});

    const auto webhook = store->createWebhook("fuzz", "", 30).value();
    entrypoints.push_back({store->listEntrypoints(webhook.id).value().at(0).id, "none", "", true});
    const std::string standardSecret = "whsec_" + webhooker::base64Encode(std::string(32, 'k'));
    for (const auto& [scheme, secret] : std::vector<std::pair<std::string, std::string>>{
             {"standard", standardSecret}, {"github", "gh-secret"}, {"stripe", "whsec_stripe"}}) {
      const auto ep = store->createEntrypoint(webhook.id).value();
      store->setEntrypointVerification(webhook.id, ep.id, *webhooker::parseVerificationScheme(scheme), secret)
          .value();
      entrypoints.push_back({ep.id, scheme, secret, true});
    }
    const auto off = store->createEntrypoint(webhook.id).value();
    store->setEntrypointActive(webhook.id, off.id, false).value();
    entrypoints.push_back({off.id, "none", "", false});

    using webhooker::TargetType;
    for (const auto& [type, active] : std::vector<std::pair<TargetType, bool>>{
             {TargetType::kHttp, true}, {TargetType::kLog, true}, {TargetType::kDatabase, false}}) {
      webhooker::TargetRecord target;
      target.webhookId = webhook.id;
      target.name = std::string(targetTypeWord(type));
      target.type = type;
      target.active = active;
      if (type == TargetType::kHttp) target.configJson = R"({"url": "https://example.com/hook"})";
      store->createTarget(target).value();
      activeTargets += active ? 1 : 0;
    }
    const auto eventsDb = eventsDbs->get(webhook.id).value();
    db = std::make_unique<SQLite::Database>(eventsDbs->pathFor(webhook.id).string(),
                                            SQLite::OPEN_READWRITE);
  }

  int64_t events() { return db->execAndGet("SELECT COUNT(*) FROM events").getInt64(); }
};

std::optional<std::string> firstHeader(const HeaderPairs& headers, const char* name) {
  for (const auto& [n, v] : headers)
    if (strcasecmp(n.c_str(), name) == 0) return v;
  return std::nullopt;
}

// The sender's own id on an entrypoint that verifies its scheme, prefixed
// with the scheme. A Stripe body nested deeper than the JSON limit is not
// parsed for it (the limit has its own unit test).
std::optional<std::string> providerKey(const std::string& scheme, const std::string& body,
                                       const HeaderPairs& headers) {
  if (scheme == "github") {
    const auto delivery = firstHeader(headers, "X-GitHub-Delivery");
    return delivery ? std::optional<std::string>("github:" + *delivery) : std::nullopt;
  }
  if (scheme != "stripe" || !webhooker::jsonDepthWithin(body)) return std::nullopt;
  const json event = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!event.is_object() || !event.contains("id") || !event["id"].is_string()) return std::nullopt;
  return "stripe:" + event["id"].get<std::string>();
}

struct Expected {
  int status = 200;
  std::optional<std::string> key;
};

// The answer the handler must give, worked out from the request alone.
Expected expectedAnswer(bool wellFormedId, const Entrypoint* ep, const std::string& body,
                        const HeaderPairs& headers, bool verifies) {
  Expected e;
  if (!wellFormedId) return {404, {}};
  if (body.size() > kBodyLimit) return {413, {}};
  if (!ep) return {404, {}};
  if (!ep->active) return {410, {}};
  if (ep->scheme != "none" && !verifies) return {401, {}};
  e.key = providerKey(ep->scheme, body, headers);
  if (!e.key) e.key = firstHeader(headers, "Idempotency-Key");
  if (!e.key) e.key = firstHeader(headers, "webhook-id");
  if (e.key && (e.key->empty() || e.key->size() > 255)) return {400, e.key};
  return e;
}

void checkStored(Fixture& f, const std::string& eventId, const webhooker::server::HttpRequest& req,
                 const std::string& body, const std::optional<std::string>& key) {
  SQLite::Statement q(*f.db,
                      "SELECT body, body_size, headers, idempotency_key, query, method, path "
                      "FROM events WHERE id = ?");
  q.bind(1, eventId);
  FUZZ_CHECK(q.executeStep());
  const SQLite::Column stored = q.getColumn(0);
  FUZZ_CHECK(std::string(static_cast<const char*>(stored.getBlob()),
                         static_cast<size_t>(stored.getBytes())) == body);
  FUZZ_CHECK(q.getColumn(1).getInt64() == static_cast<int64_t>(body.size()));
  json headers = json::array();
  for (const auto& [name, value] : req.headers)
    if (webhooker::server::isStoredHeader(name)) headers.push_back({name, value});
  FUZZ_CHECK(q.getColumn(2).getString() ==
             headers.dump(-1, ' ', false, json::error_handler_t::replace));
  FUZZ_CHECK(q.getColumn(3).isNull() == !key);
  if (key) FUZZ_CHECK(q.getColumn(3).getString() == *key);
  const size_t mark = req.target.find('?');
  FUZZ_CHECK(q.getColumn(4).getString() ==
             (mark == std::string::npos ? "" : req.target.substr(mark + 1)));
  FUZZ_CHECK(q.getColumn(5).getString() == "POST" && q.getColumn(6).getString() == req.path);

  const auto tasks = f.dispatcher.tasks();
  FUZZ_CHECK(f.dispatcher.batchCount() == 1 && tasks.size() == f.activeTargets);
  for (const auto& task : tasks)
    FUZZ_CHECK(task.eventId == eventId && task.payload && task.payload->body == body);
}

void oneRequest(Fixture& f, FuzzedDataProvider& in, std::map<std::string, std::string>& seenKeys) {
  const size_t choice = in.ConsumeIntegralInRange<size_t>(0, f.entrypoints.size() + 1);
  const Entrypoint* ep = choice < f.entrypoints.size() ? &f.entrypoints[choice] : nullptr;
  std::string rawId = ep ? ep->id : choice == f.entrypoints.size() ? webhooker::newUuid()
                                                                 : in.ConsumeRandomLengthString(40);
  if (ep && in.ConsumeBool())
    for (char& c : rawId) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));

  webhooker::server::HttpRequest req;
  req.method = "POST";
  req.path = "/hooks/" + rawId;
  req.target = req.path;
  if (in.ConsumeBool()) req.target += "?" + in.ConsumeRandomLengthString(64);
  // What the route /hooks/{id} matches; the server answers 404 itself otherwise.
  if (rawId.empty() || rawId.find('/') != std::string::npos) return;
  req.matches = {req.path, rawId};

  const bool genuine = in.ConsumeBool();
  const int64_t offset = in.ConsumeIntegralInRange(-1000, 1000);
  const std::string body = in.ConsumeRandomLengthString(kBodyLimit + 64);
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  HeaderPairs headers;
  if (genuine && ep && ep->scheme != "none")
    headers = webhooker::fuzz::genuineSignature(in, ep->scheme, ep->secret, now + offset, body);
  const int extra = in.ConsumeIntegralInRange(0, 6);
  for (int i = 0; i < extra; ++i) {
    std::string name = in.ConsumeBool() ? std::string(in.PickValueInArray(kHeaderNames))
                                        : in.ConsumeRandomLengthString(32);
    headers.emplace_back(std::move(name), in.ConsumeRandomLengthString(300));
  }
  for (const auto& [name, value] : headers) req.headers.emplace(name, value);
  req.remote_addr = "127.0.0.1";

  const bool wellFormedId = ep || webhooker::isUuid(rawId);
  std::optional<bool> verifies =
      ep && genuine ? webhooker::fuzz::mustVerify(ep->scheme, offset, 2) : std::optional<bool>(false);
  const int64_t before = f.events();
  f.dispatcher.clear();

  // Answered at once or from a commit thread after the commit.
  req.body = body;
  std::promise<webhooker::server::HttpResponse> answered;
  auto pending = answered.get_future();
  f.handler->handle(req, [&answered](webhooker::server::HttpResponse r) {
    answered.set_value(std::move(r));
  });
  const webhooker::server::HttpResponse res = pending.get();

  const json answer = json::parse(res.body, nullptr, false);
  FUZZ_CHECK(answer.is_object());
  if (!verifies) verifies = res.status != 401;  // signed on the edge of the tolerance: either
  const Expected expected = expectedAnswer(wellFormedId, ep, body, headers, *verifies);
  if (res.status != expected.status)
    std::fprintf(stderr, "status %d, expected %d: %s\n", res.status, expected.status, res.body.c_str());
  FUZZ_CHECK(res.status == expected.status);
  if (res.status != 200) {
    FUZZ_CHECK(answer.contains("error") && answer["error"]["code"].is_string() &&
               answer["error"]["message"].is_string());
    FUZZ_CHECK(f.events() == before && f.dispatcher.batchCount() == 0);
    return;
  }
  const std::string eventId = answer["event_id"].get<std::string>();
  FUZZ_CHECK(answer["deliveries"] == f.activeTargets);
  const auto seen = expected.key ? seenKeys.find(*expected.key) : seenKeys.end();
  FUZZ_CHECK(answer["duplicate"] == (seen != seenKeys.end()));
  if (seen != seenKeys.end()) {
    FUZZ_CHECK(eventId == seen->second && f.events() == before && f.dispatcher.batchCount() == 0);
    return;
  }
  FUZZ_CHECK(f.events() == before + 1);
  checkStored(f, eventId, req, body, expected.key);
  if (expected.key) seenKeys[*expected.key] = eventId;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture fixture;
  FuzzedDataProvider in(data, size);
  std::map<std::string, std::string> seenKeys;  // idempotency key → event id, this input only
  const int requests = in.ConsumeIntegralInRange(1, 3);
  for (int i = 0; i < requests; ++i) oneRequest(fixture, in, seenKeys);
  fixture.db->exec("DELETE FROM deliveries; DELETE FROM events");
  return 0;
}
