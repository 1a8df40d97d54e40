// An entrypoint with signature verification accepts only signed requests;
// a refused one gets 401 and stores nothing. The secret never comes back.
// A signed request sent again (GitHub and Stripe signatures do not stop a
// replay) is one event, keyed by the provider's id.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include "base/hmac.h"
#include "base/secret.h"
#include "tests/support/contains.h"
#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/test_server.h"

using namespace webhooker;
using namespace webhooker::testing;

TEST_CASE("a github-verified entrypoint stores only correctly signed requests") {
  TestServer server;
  auto admin = server.client();
  const auto webhook = server.createWebhook("gh");
  const std::string webhookId = webhook["id"];
  const std::string entrypointId = webhook["entrypoints"][0]["id"];
  const std::string epPath = "/api/v1/webhooks/" + webhookId + "/entrypoints/" + entrypointId;
  const auto eventsDb = server.dataDir() / ("events-" + webhookId + ".db");

  // Bad settings are refused and change nothing.
  CHECK(errorCode(patchJson(admin, epPath, {{"verification", {{"scheme", "hmac"}}}})) ==
        "invalid_field");
  CHECK(errorCode(patchJson(admin, epPath, {{"verification", {{"scheme", "standard"},
                                                              {"secret", "plain"}}}})) ==
        "invalid_field");
  CHECK(errorCode(patchJson(admin, epPath, {{"verification", "github"}})) == "invalid_field");

  auto set = patchJson(admin, epPath,
                       {{"verification", {{"scheme", "github"},
                                          {"secret", "It's a Secret to Everybody"}}}});
  REQUIRE(statusOf(set) == 200);
  CHECK(jsonOf(set)["verification"] == "github");
  CHECK(set->body.find("Secret to Everybody") == std::string::npos);
  auto listed = admin.Get(("/api/v1/webhooks/" + webhookId).c_str());
  REQUIRE(listed);
  CHECK(listed->body.find("Secret to Everybody") == std::string::npos);

  auto hook = server.anonymousClient();
  const std::string path = "/hooks/" + entrypointId;
  auto unsigned_ = hook.Post(path.c_str(), "Hello, World!", "text/plain");
  CHECK(statusOf(unsigned_) == 401);
  CHECK(errorCode(unsigned_) == "signature_invalid");
  httplib::Headers wrong{{"X-Hub-Signature-256", "sha256=" + std::string(64, '0')}};
  CHECK(statusOf(hook.Post(path.c_str(), wrong, "Hello, World!", "text/plain")) == 401);
  CHECK(countRows(eventsDb, "events") == 0);

  httplib::Headers good{
      {"X-Hub-Signature-256",
       "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"}};
  CHECK(statusOf(hook.Post(path.c_str(), good, "Hello, World!", "text/plain")) == 200);
  CHECK(countRows(eventsDb, "events") == 1);

  // Turning it off accepts unsigned requests again.
  REQUIRE(statusOf(patchJson(admin, epPath, {{"verification", {{"scheme", "none"}}}})) == 200);
  CHECK(statusOf(hook.Post(path.c_str(), "Hello again", "text/plain")) == 200);
  CHECK(countRows(eventsDb, "events") == 2);
}

namespace {

// A verified entrypoint of a fresh webhook; its events DB path.
struct VerifiedHook {
  std::string path;
  std::filesystem::path eventsDb;
};

VerifiedHook verifiedHook(TestServer& server, const std::string& scheme, const std::string& secret) {
  auto admin = server.client();
  const auto webhook = server.createWebhook(scheme);
  const std::string webhookId = webhook["id"];
  const std::string entrypointId = webhook["entrypoints"][0]["id"];
  REQUIRE(statusOf(patchJson(admin,
                             "/api/v1/webhooks/" + webhookId + "/entrypoints/" + entrypointId,
                             {{"verification", {{"scheme", scheme}, {"secret", secret}}}})) == 200);
  return {"/hooks/" + entrypointId, server.dataDir() / ("events-" + webhookId + ".db")};
}

std::string stripeSignature(const std::string& secret, const std::string& body, int64_t at) {
  const std::string t = std::to_string(at);
  return "t=" + t + ",v1=" + hexEncode(hmacSha256(secret, t + "." + body));
}

int64_t unixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_CASE("a replayed signed GitHub request is stored once: X-GitHub-Delivery is its key") {
  TestServer server;
  const std::string secret = "It's a Secret to Everybody";
  const VerifiedHook hook = verifiedHook(server, "github", secret);
  const std::string body = R"({"action": "opened"})";
  const std::string signature = "sha256=" + hexEncode(hmacSha256(secret, body));
  auto sender = server.anonymousClient();
  const auto send = [&](const std::string& delivery) {
    return sender.Post(hook.path, {{"X-Hub-Signature-256", signature}, {"X-GitHub-Delivery", delivery}},
                       body, "application/json");
  };

  auto first = send("72d3162e-cc78-11e3-81ab-4c9367dc0958");
  REQUIRE(statusOf(first) == 200);
  // The same request again, as a replayer with the captured bytes sends it.
  auto replayed = send("72d3162e-cc78-11e3-81ab-4c9367dc0958");
  REQUIRE(statusOf(replayed) == 200);
  CHECK(jsonOf(replayed)["duplicate"] == true);
  CHECK(jsonOf(replayed)["event_id"] == jsonOf(first)["event_id"]);
  CHECK(countRows(hook.eventsDb, "events") == 1);
  CHECK(countRows(hook.eventsDb, "deliveries") == 0);  // no target: nothing to hand over twice
  CHECK(server.dispatcher().batchCount() == 1);

  // Another delivery with the same body is another event.
  CHECK(jsonOf(send("8a0b5e10-cc78-11e3-81ab-4c9367dc0958"))["duplicate"] == false);
  CHECK(countRows(hook.eventsDb, "events") == 2);
  // A sender's own key of the same text is another sender's: not a duplicate.
  auto keyed = sender.Post(hook.path,
                           {{"X-Hub-Signature-256", signature},
                            {"Idempotency-Key", "72d3162e-cc78-11e3-81ab-4c9367dc0958"}},
                           body, "application/json");
  CHECK(jsonOf(keyed)["duplicate"] == false);
  CHECK(countRows(hook.eventsDb, "events") == 3);
}

TEST_CASE("a replayed signed Stripe event is stored once: the event's id is its key") {
  TestServer server;
  const std::string secret = "whsec_stripe-endpoint-secret";
  const VerifiedHook hook = verifiedHook(server, "stripe", secret);
  auto sender = server.anonymousClient();
  const auto send = [&](const std::string& body, int64_t at) {
    return sender.Post(hook.path, {{"Stripe-Signature", stripeSignature(secret, body, at)}}, body,
                       "application/json");
  };
  const std::string event = R"({"id": "evt_1NG8Du2eZvKYlo2CUI79vXWy", "type": "charge.succeeded"})";

  auto first = send(event, unixNow());
  REQUIRE(statusOf(first) == 200);
  auto replayed = send(event, unixNow());  // a replay, or Stripe's own retry signed anew
  REQUIRE(statusOf(replayed) == 200);
  CHECK(jsonOf(replayed)["duplicate"] == true);
  CHECK(jsonOf(replayed)["event_id"] == jsonOf(first)["event_id"]);
  CHECK(countRows(hook.eventsDb, "events") == 1);

  // Another event is stored; a body without an id falls back to the headers.
  const std::string other = R"({"id": "evt_2", "type": "charge.refunded"})";
  CHECK(jsonOf(send(other, unixNow()))["duplicate"] == false);
  CHECK(jsonOf(send(R"({"type": "ping"})", unixNow()))["duplicate"] == false);
  CHECK(jsonOf(send(R"({"type": "ping"})", unixNow()))["duplicate"] == false);
  CHECK(countRows(hook.eventsDb, "events") == 4);
}

TEST_CASE("a Stripe signature more than 5 minutes behind or ahead of the clock is refused") {
  TestServer server;
  const std::string secret = "whsec_stripe-endpoint-secret";
  const VerifiedHook hook = verifiedHook(server, "stripe", secret);
  auto sender = server.anonymousClient();
  const auto send = [&](const std::string& id, int64_t at) {
    const std::string body = R"({"id": ")" + id + R"(", "type": "charge.succeeded"})";
    return sender.Post(hook.path, {{"Stripe-Signature", stripeSignature(secret, body, at)}}, body,
                       "application/json");
  };
  for (const int64_t off : {-360, 360}) {
    CAPTURE(off);
    auto res = send("evt_off_" + std::to_string(off), unixNow() + off);
    CHECK(statusOf(res) == 401);
    CHECK(errorCode(res) == "signature_invalid");
  }
  CHECK(countRows(hook.eventsDb, "events") == 0);
  // Within the tolerance either way (a sender's clock a little fast or slow).
  CHECK(statusOf(send("evt_behind", unixNow() - 240)) == 200);
  CHECK(statusOf(send("evt_ahead", unixNow() + 240)) == 200);
  CHECK(countRows(hook.eventsDb, "events") == 2);
}

// The verification settings are read from the main DB, which an operator (or
// damage) can change behind the daemon's back: whatever the row says that the
// daemon cannot use refuses the request.
TEST_CASE("a daemon refuses requests its entrypoint's edited settings cannot verify") {
  TempDir dataDir;
  DaemonProcess daemon(dataDir.path(), {.args = {}, .env = {DaemonApi::adminTokenEnv()}});
  DaemonApi api(daemon.url());
  const auto webhook = api.createWebhook("edited");
  const std::string webhookId = webhook["id"];
  api.createTarget(webhookId, {{"name", "db"}, {"type", "database"}});
  constexpr const char* kSecret = "a-secret-that-must-not-be-logged";
  const auto addVerifiedEntrypoint = [&] {
    auto admin = api.admin();
    auto res = postJson(admin, "/api/v1/webhooks/" + webhookId + "/entrypoints",
                        {{"verification", {{"scheme", "github"}, {"secret", kSecret}}}});
    REQUIRE(statusOf(res) == 201);
    return jsonOf(res)["id"].get<std::string>();
  };
  const std::string unknownScheme = addVerifiedEntrypoint();
  const std::string nullSecret = addVerifiedEntrypoint();
  {
    SQLite::Database db((dataDir / "webhooker.db").string(), SQLite::OPEN_READWRITE);
    // The schema's CHECK keeps unknown schemes out of writes that honour it;
    // a damaged file, or one a newer version wrote, need not.
    db.exec("PRAGMA ignore_check_constraints = ON");
    db.exec("UPDATE entrypoints SET verification = 'sha512-hmac' WHERE id = '" + unknownScheme + "'");
    db.exec("UPDATE entrypoints SET verification_secret = NULL WHERE id = '" + nullSecret + "'");
  }

  // Signed as GitHub would sign with the key each row now implies.
  const std::string body = R"({"order": 1})";
  const auto post = [&](const std::string& entrypointId, const std::string& key) {
    const httplib::Headers signature{
        {"X-Hub-Signature-256", "sha256=" + hexEncode(hmacSha256(key, body))}};
    return api.sender().Post(("/hooks/" + entrypointId).c_str(), signature, body,
                             "application/json");
  };
  const auto unknown = post(unknownScheme, kSecret);
  CHECK(statusOf(unknown) == 401);
  CHECK(errorCode(unknown) == "verification_failed");
  const auto emptyKey = post(nullSecret, "");
  CHECK(statusOf(emptyKey) == 401);
  CHECK(errorCode(emptyKey) == "verification_failed");
  CHECK(countRows(dataDir / ("events-" + webhookId + ".db"), "events") == 0);

  auto metrics = api.sender().Get("/metrics");
  REQUIRE(statusOf(metrics) == 200);
  const std::string failures = "webhooker_ingest_verification_failures_total";
  CHECK(valueIn(metrics->body, failures, {{"reason", "unknown_scheme"}}) == 1);
  CHECK(valueIn(metrics->body, failures, {{"reason", "unusable_secret"}}) == 1);
  const std::string log = daemon.stderrText();
  CHECK(contains(log, "ingest.verification_unusable entrypoint_id=" + unknownScheme +
                          " reason=unknown_scheme"));
  CHECK(contains(log, "ingest.verification_unusable entrypoint_id=" + nullSecret +
                          " reason=unusable_secret"));
  CHECK_FALSE(contains(log, kSecret));
}
