// An entrypoint with signature verification accepts only signed requests;
// a refused one gets 401 and stores nothing. The secret never comes back.
#include <doctest/doctest.h>

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
