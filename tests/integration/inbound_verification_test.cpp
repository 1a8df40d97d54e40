// An entrypoint with signature verification accepts only signed requests;
// a refused one gets 401 and stores nothing. The secret never comes back.
#include <doctest/doctest.h>

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
