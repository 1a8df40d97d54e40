// Receiving from providers: every preset against a vector from the
// provider's own documentation where it publishes one, and against requests
// signed here by hand (the HMAC of the provider's documented format, built
// without the scheme code under test). Over HTTP: a genuine request is
// stored; a body changed by one byte, a wrong secret, a stale timestamp, a
// missing header, a signature for another URL are 401 and store nothing.
// Rotation, the handshakes (answered, never stored), bad settings refused
// naming the field, custom responses, and form bodies routed by jq.
#include <doctest/doctest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <strings.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/form_encoding.h"
#include "base/hmac.h"
#include "base/secret.h"
#include "server/inbound_settings.h"
#include "server/inbound_verifier.h"
#include "storage/main_store.h"
#include "storage/migration.h"
#include "storage/sqlite_database.h"
#include "targets/webhook_signature.h"
#include "tests/support/contains.h"
#include "tests/support/engine_harness.h"
#include "tests/support/eventually.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/receiver.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_server.h"

using namespace webhooker;
using namespace webhooker::server;
using namespace webhooker::testing;
using nlohmann::json;

namespace {

using Headers = std::map<std::string, std::string>;

HeaderLookup lookupIn(const Headers& headers) {
  return [headers](const char* name) {
    for (const auto& [n, v] : headers)
      if (strcasecmp(n.c_str(), name) == 0) return v;
    return std::string();
  };
}

TimePoint at(int64_t seconds) { return TimePoint{std::chrono::seconds(seconds)}; }

int64_t unixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<void> verifyPreset(const std::string& preset, const std::string& secret,
                          const Headers& headers, const std::string& body, int64_t now,
                          const std::string& publicUrl = "", const std::string& target = "") {
  const HeaderLookup lookup = lookupIn(headers);
  const InboundRequest request{lookup, body, target, publicUrl};
  const auto scheme = webhooker::parseVerificationScheme(preset);
  REQUIRE(scheme);
  return verifyRequest(presetScheme(*scheme), {secret}, request, at(now));
}

std::string hex(HmacDigest d, const std::string& key, const std::string& data) {
  return hexEncode(hmac(d, key, data));
}
std::string b64(HmacDigest d, const std::string& key, const std::string& data) {
  return base64Encode(hmac(d, key, data));
}

constexpr const char* kBody = R"({"id":"evt_1","type":"ping"})";

json with(json base, const json& changes) {
  base.update(changes);
  return base;
}

}  // namespace

TEST_CASE("presets verify the vectors their providers document") {
  // GitHub's documented example for X-Hub-Signature-256; Meta signs the
  // same header the same way (its docs give no vector of their own).
  for (const char* preset : {"github", "meta"}) {
    CAPTURE(preset);
    CHECK(verifyPreset(
        preset, "It's a Secret to Everybody",
        {{"X-Hub-Signature-256",
          "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"}},
        "Hello, World!", 0));
  }
  // The Standard Webhooks specification's example, under its own headers
  // and under Svix's.
  const std::string stdBody = R"({"test": 2432232314})";
  for (const char* prefix : {"webhook-", "svix-"}) {
    CAPTURE(prefix);
    const std::string p = prefix;
    CHECK(verifyPreset("standard", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                       {{p + "id", "msg_p5jXN8AQM9LWM0D4loKWxJek"},
                        {p + "timestamp", "1614265330"},
                        {p + "signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}},
                       stdBody, 1614265330));
  }
  // Slack's "Verifying requests from Slack" walk-through (a slash command).
  const std::string slackBody =
      "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id="
      "G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-"
      "collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F3977008"
      "85554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121."
      "803a0bc887a14d10d2c447fce8b6703c";
  const Headers slack{
      {"X-Slack-Request-Timestamp", "1531420618"},
      {"X-Slack-Signature", "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"}};
  CHECK(verifyPreset("slack", "8f742231b10e8888abcd99yyyzzz85a5", slack, slackBody, 1531420618));
  CHECK(verifyPreset("slack", "8f742231b10e8888abcd99yyyzzz85a5", slack, slackBody + "x",
                     1531420618)
            .error()
            .code == "bad_signature");
  // Twilio's security page: auth token 12345, a POST to
  // https://mycompany.com/myapp.php?foo=1&bar=2 with a <Gather>'s fields.
  const std::string twilioBody =
      "CallSid=CA1234567890ABCDE&Caller=%2B14158675309&Digits=1234&From=%2B14158675309&To=%2B18005551212";
  const Headers twilio{{"X-Twilio-Signature", "RSOYDt4T1cUTdK1PDd93/VVr8B8="},
                       {"Content-Type", "application/x-www-form-urlencoded"}};
  CHECK(verifyPreset("twilio", "12345", twilio, twilioBody, 0, "https://mycompany.com",
                     "/myapp.php?foo=1&bar=2"));
  CHECK(verifyPreset("twilio", "12345", twilio, twilioBody, 0, "https://mycompany.com",
                     "/myapp.php?foo=1&bar=3")
            .error()
            .code == "bad_signature");
}

TEST_CASE("presets verify signatures computed by another implementation") {
  // Computed with Python's hmac module from each provider's documented
  // format, at t = 1700000000.
  const int64_t t = 1700000000;
  CHECK(verifyPreset(
      "stripe", "whsec_stripe_test",
      {{"Stripe-Signature",
        "t=1700000000,v1=59f1a87a5432848415c5a0e5031d00cb71db5f497f9981f2f56bd72b276e6aa4"}},
      kBody, t));
  CHECK(verifyPreset("shopify", "shpss_test",
                     {{"X-Shopify-Hmac-Sha256", "7R+nvTrfrAbkRZqbSA0Mei4dCudAnsAElrt9rKWIch8="}},
                     kBody, t));
  CHECK(verifyPreset(
      "zoom", "zoom_secret",
      {{"x-zm-request-timestamp", "1700000000"},
       {"x-zm-signature", "v0=9b02c09c7f353ed31733cfecec4acd41c689afa0046aaa97b774a7261a901c98"}},
      kBody, t));
  CHECK(verifyPreset(
      "linear", "lin_wh_test",
      {{"Linear-Signature", "02f27a7b3085e048c5d431e5d34b5647644f966bf9ce21c605fd773cf59f54be"}},
      kBody, t));
  CHECK(verifyPreset(
      "paddle", "pdl_ntfset_test",
      {{"Paddle-Signature",
        "ts=1700000000;h1=248431ddbbb6b4cbc111076da85fe706b4bab8a9811d520f2bb0fba7703b1508"}},
      kBody, t));
  CHECK(verifyPreset(
      "twitter", "consumer_secret",
      {{"x-twitter-webhooks-signature", "sha256=Wa932hgxiTI+L4KI4UiGi+dkc8fnQZ2RHh+hG8wo6fc="}},
      kBody, t));
  CHECK(verifyPreset(
      "dropbox", "dropbox_app_secret",
      {{"X-Dropbox-Signature", "27102c5970e8d1dea0216eee2e45c949055332133dc4b5e641728d8db10405e4"}},
      kBody, t));
  CHECK(verifyPreset("gitlab", "glpat-token", {{"X-Gitlab-Token", "glpat-token"}}, kBody, t));
  CHECK(verifyPreset("gitlab", "glpat-token", {{"X-Gitlab-Token", "glpat-tokeN"}}, kBody, t)
            .error()
            .code == "bad_signature");
  // A custom scheme: HMAC-SHA512, base64, over "<X-Id>.<body>".
  SignatureScheme custom;
  custom.algorithm = SignatureAlgorithm::kHmacSha512;
  custom.encoding = SignatureEncoding::kBase64;
  custom.header = "X-Sig";
  custom.content = "{header:X-Id}.{body}";
  REQUIRE(validateScheme(custom));
  const Headers h{{"X-Id", "x"},
                  {"X-Sig",
                   "zPTn8HutC1vc08BiO1iZZ1hmMGHrtG1MD2y3o+dN4S5M3n9ZBnjKWNil1gPwfnl5bepU36K9BkKkg7"
                   "anu8zkUw=="}};
  const HeaderLookup lookup = lookupIn(h);
  CHECK(verifyRequest(custom, {"k"}, InboundRequest{lookup, kBody, "", ""}, at(t)));
  CHECK(verifyRequest(custom, {"K"}, InboundRequest{lookup, kBody, "", ""}, at(t)).error().code ==
        "bad_signature");
}

namespace {

// One preset as a sender would use it: its secret, and headers for a body
// signed at a time (by hand, from the provider's documented format).
struct Provider {
  std::string preset;
  std::string secret;
  bool timestamped = true;
  std::string contentType = "application/json";
  std::function<Headers(const std::string& secret, const std::string& body, int64_t t,
                        const std::string& url)>
      sign;
};

std::vector<Provider> providers() {
  using D = HmacDigest;
  const std::string whsec = "whsec_" + base64Encode(std::string(32, 'w'));
  return {
      {"github", "gh-secret", false, "application/json",
       [](auto& k, auto& b, int64_t, auto&) {
         return Headers{{"X-Hub-Signature-256", "sha256=" + hex(D::kSha256, k, b)}};
       }},
      {"meta", "app-secret", false, "application/json",
       [](auto& k, auto& b, int64_t, auto&) {
         return Headers{{"X-Hub-Signature-256", "sha256=" + hex(D::kSha256, k, b)}};
       }},
      {"stripe", "whsec_stripe", true, "application/json",
       [](auto& k, auto& b, int64_t t, auto&) {
         const std::string ts = std::to_string(t);
         return Headers{{"Stripe-Signature", "t=" + ts + ",v1=" + hex(D::kSha256, k, ts + "." + b)}};
       }},
      {"standard", whsec, true, "application/json",
       [](auto& k, auto& b, int64_t t, auto&) {
         return Headers{{"webhook-id", "msg_1"},
                        {"webhook-timestamp", std::to_string(t)},
                        {"webhook-signature", standardWebhookSignatureHeader({k}, "msg_1", t, b)}};
       }},
      {"shopify", "shpss", false, "application/json",
       [](auto& k, auto& b, int64_t, auto&) {
         return Headers{{"X-Shopify-Hmac-Sha256", b64(D::kSha256, k, b)}};
       }},
      {"slack", "slack-signing", true, "application/x-www-form-urlencoded",
       [](auto& k, auto& b, int64_t t, auto&) {
         const std::string ts = std::to_string(t);
         return Headers{{"X-Slack-Request-Timestamp", ts},
                        {"X-Slack-Signature", "v0=" + hex(D::kSha256, k, "v0:" + ts + ":" + b)}};
       }},
      {"twilio", "auth-token", false, "application/x-www-form-urlencoded",
       [](auto& k, auto& b, int64_t, auto& url) {
         // The URL, then the fields sorted by name, each name then value.
         std::vector<std::pair<std::string, std::string>> fields;
         for (const auto& [n, v] : parseFormPairs(b)) fields.emplace_back(n, v);
         std::sort(fields.begin(), fields.end());
         std::string data = url;
         for (const auto& [n, v] : fields) data += n + v;
         return Headers{{"X-Twilio-Signature", b64(D::kSha1, k, data)}};
       }},
      {"zoom", "zoom-secret", true, "application/json",
       [](auto& k, auto& b, int64_t t, auto&) {
         const std::string ts = std::to_string(t);
         return Headers{{"x-zm-request-timestamp", ts},
                        {"x-zm-signature", "v0=" + hex(D::kSha256, k, "v0:" + ts + ":" + b)}};
       }},
      {"linear", "lin-secret", false, "application/json",
       [](auto& k, auto& b, int64_t, auto&) {
         return Headers{{"Linear-Signature", hex(D::kSha256, k, b)}};
       }},
      {"paddle", "pdl-secret", true, "application/json",
       [](auto& k, auto& b, int64_t t, auto&) {
         const std::string ts = std::to_string(t);
         return Headers{{"Paddle-Signature", "ts=" + ts + ";h1=" + hex(D::kSha256, k, ts + ":" + b)}};
       }},
      {"gitlab", "gitlab-token", false, "application/json",
       [](auto& k, auto&, int64_t, auto&) { return Headers{{"X-Gitlab-Token", k}}; }},
      {"twitter", "consumer-secret", false, "application/json",
       [](auto& k, auto& b, int64_t, auto&) {
         return Headers{{"x-twitter-webhooks-signature", "sha256=" + b64(D::kSha256, k, b)}};
       }},
      {"dropbox", "dropbox-secret", false, "application/json",
       [](auto& k, auto& b, int64_t, auto&) {
         return Headers{{"X-Dropbox-Signature", hex(D::kSha256, k, b)}};
       }},
  };
}

httplib::Headers asHttp(const Headers& h) { return httplib::Headers(h.begin(), h.end()); }

struct Entry {
  std::string path;     // /hooks/<id>
  std::string apiPath;  // /api/v1/webhooks/<w>/entrypoints/<id>
};

Entry newEntrypoint(TestServer& server, const std::string& webhookId, const json& fields) {
  auto admin = server.client();
  auto created = postJson(admin, "/api/v1/webhooks/" + webhookId + "/entrypoints", fields);
  INFO((created ? created->body : std::string("no answer")));
  REQUIRE(statusOf(created) == 201);
  const std::string id = jsonOf(created)["id"];
  return {"/hooks/" + id, "/api/v1/webhooks/" + webhookId + "/entrypoints/" + id};
}

}  // namespace

TEST_CASE("every preset stores a genuine request and refuses each kind of forgery") {
  TestServer server;
  const auto webhook = server.createWebhook("providers");
  const std::string webhookId = webhook["id"];
  const auto eventsDb = server.eventsDbPath(webhookId);
  const std::string publicUrl = "https://hooks.example.com";
  auto hook = server.anonymousClient();
  int64_t stored = 0;

  for (const Provider& p : providers()) {
    CAPTURE(p.preset);
    json verification = {{"scheme", p.preset}, {"secret", p.secret}};
    if (p.preset == "twilio") verification["public_url"] = publicUrl;
    const Entry ep = newEntrypoint(server, webhookId, {{"verification", verification}});
    const std::string body = p.contentType == "application/json"
                                 ? std::string(R"({"type":"order.paid","n":1})")
                                 : std::string("command=%2Fdeploy&text=api+prod");
    const std::string url = publicUrl + ep.path + "?source=test";
    const std::string target = ep.path + "?source=test";
    const int64_t now = unixNow();

    const auto send = [&](const Headers& headers, const std::string& sent) {
      return hook.Post(target.c_str(), asHttp(headers), sent, p.contentType.c_str());
    };
    const auto refused = [&](const httplib::Result& res) {
      CHECK(statusOf(res) == 401);
      CHECK(errorCode(res) == "signature_invalid");
      CHECK(countRows(eventsDb, "events") == stored);
    };

    // Genuine: stored, byte for byte.
    auto genuine = send(p.sign(p.secret, body, now, url), body);
    INFO((genuine ? genuine->body : std::string("no answer")));
    REQUIRE(statusOf(genuine) == 200);
    ++stored;
    CHECK(countRows(eventsDb, "events") == stored);

    // The body changed by one byte, under the signature of the original.
    std::string changed = body;
    changed[changed.size() / 2] ^= 0x01;
    if (p.preset != "gitlab") refused(send(p.sign(p.secret, body, now, url), changed));
    // Another secret.
    const std::string other =
        p.preset == "standard" ? "whsec_" + base64Encode(std::string(32, 'o')) : p.secret + "x";
    refused(send(p.sign(other, body, now, url), body));
    // Stale, and from the future, a minute beyond the 5 minutes: the daemon
    // reads its clock after `now`, maybe seconds later on a loaded machine,
    // and 301 s ahead of `now` is 300 s ahead of the next second, accepted.
    // The edges themselves (300 s in, 301 s out) are checked against a fixed
    // clock in inbound_verifier_test.
    if (p.timestamped) {
      refused(send(p.sign(p.secret, body, now - 360, url), body));
      refused(send(p.sign(p.secret, body, now + 360, url), body));
    }
    // No signature at all.
    refused(send({}, body));
    // Signed for another URL.
    if (p.preset == "twilio")
      refused(send(p.sign(p.secret, body, now, "https://evil.example.com" + target), body));
  }
  // Nothing of a secret is in the events DB (a token scheme's header is not
  // stored either).
  const std::string dump = dumpDatabase(eventsDb);
  for (const Provider& p : providers()) CHECK_FALSE(contains(dump, p.secret));
}

TEST_CASE("rotation: the old and the new secret both verify until the old one is removed") {
  TestServer server;
  const auto webhook = server.createWebhook("rotation");
  const std::string webhookId = webhook["id"];
  auto admin = server.client();
  const Entry ep =
      newEntrypoint(server, webhookId, {{"verification", {{"scheme", "github"}, {"secret", "old"}}}});
  auto hook = server.anonymousClient();
  const auto sendSigned = [&](const std::string& secret) {
    const std::string body = R"({"n":1})";
    return statusOf(hook.Post(
        ep.path.c_str(), {{"X-Hub-Signature-256", "sha256=" + hex(HmacDigest::kSha256, secret, body)}},
        body, "application/json"));
  };
  CHECK(sendSigned("old") == 200);
  CHECK(sendSigned("new") == 401);

  auto both = patchJson(admin, ep.apiPath,
                        {{"verification", {{"scheme", "github"}, {"secrets", {"new", "old"}}}}});
  REQUIRE(statusOf(both) == 200);
  CHECK(jsonOf(both)["verification_settings"]["secret_count"] == 2);
  CHECK_FALSE(contains(both->body, "\"new\""));
  CHECK(sendSigned("old") == 200);
  CHECK(sendSigned("new") == 200);

  REQUIRE(statusOf(patchJson(admin, ep.apiPath,
                             {{"verification", {{"scheme", "github"}, {"secrets", {"new"}}}}})) ==
          200);
  CHECK(sendSigned("old") == 401);
  CHECK(sendSigned("new") == 200);
  CHECK(countRows(server.eventsDbPath(webhookId), "events") == 4);
  // Neither secret is anywhere an answer goes.
  auto listed = admin.Get(("/api/v1/webhooks/" + webhookId).c_str());
  REQUIRE(listed);
  CHECK_FALSE(contains(listed->body, "\"old\""));
  CHECK_FALSE(contains(listed->body, "\"new\""));
}

TEST_CASE("handshakes are answered as each provider specifies and store nothing") {
  TestServer server;
  const auto webhook = server.createWebhook("handshakes");
  const std::string webhookId = webhook["id"];
  const auto eventsDb = server.eventsDbPath(webhookId);
  auto hook = server.anonymousClient();
  const int64_t now = unixNow();
  const std::string ts = std::to_string(now);

  std::string kind;
  SUBCASE("slack url_verification, signed") {
    kind = "slack";
    const Entry ep = newEntrypoint(
        server, webhookId,
        {{"verification", {{"scheme", "slack"}, {"secret", "slack-signing"}}},
         {"handshake", {{"kind", "slack"}}}});
    const std::string body =
        R"({"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"})";
    const Headers signedHeaders{
        {"X-Slack-Request-Timestamp", ts},
        {"X-Slack-Signature",
         "v0=" + hex(HmacDigest::kSha256, "slack-signing", "v0:" + ts + ":" + body)}};
    auto answer = hook.Post(ep.path.c_str(), asHttp(signedHeaders), body, "application/json");
    REQUIRE(statusOf(answer) == 200);
    CHECK(answer->body == "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P");
    CHECK(contains(answer->get_header_value("Content-Type"), "text/plain"));
    // Unsigned, it is refused like any request.
    CHECK(statusOf(hook.Post(ep.path.c_str(), body, "application/json")) == 401);
  }
  SUBCASE("meta hub.challenge with the verify token; another token is 403") {
    kind = "meta";
    const Entry ep = newEntrypoint(
        server, webhookId,
        {{"verification", {{"scheme", "meta"}, {"secret", "app-secret"}}},
         {"handshake", {{"kind", "meta"}, {"verify_token", "meatyhamhock"}}}});
    auto ok = hook.Get(
        (ep.path + "?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock")
            .c_str());
    REQUIRE(statusOf(ok) == 200);
    CHECK(ok->body == "1158201444");
    CHECK(contains(ok->get_header_value("Content-Type"), "text/plain"));
    auto wrong = hook.Get(
        (ep.path + "?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=other").c_str());
    CHECK(statusOf(wrong) == 403);
    CHECK(errorCode(wrong) == "handshake_refused");
    CHECK_FALSE(contains(wrong->body, "meatyhamhock"));
  }
  SUBCASE("zoom endpoint.url_validation, signed") {
    kind = "zoom";
    const Entry ep =
        newEntrypoint(server, webhookId,
                      {{"verification", {{"scheme", "zoom"}, {"secret", "zoom_secret"}}},
                       {"handshake", {{"kind", "zoom"}}}});
    const std::string body =
        R"({"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"})";
    const Headers signedHeaders{
        {"x-zm-request-timestamp", ts},
        {"x-zm-signature", "v0=" + hex(HmacDigest::kSha256, "zoom_secret", "v0:" + ts + ":" + body)}};
    auto answer = hook.Post(ep.path.c_str(), asHttp(signedHeaders), body, "application/json");
    REQUIRE(statusOf(answer) == 200);
    // Python's hmac: HMAC-SHA256("zoom_secret", plainToken), hex.
    CHECK(jsonOf(answer) ==
          json{{"plainToken", "qgg8vlvZRS6UYooatFL8Aw"},
               {"encryptedToken",
                "46a324cfb7c2ec760e4cd561586a53aadb6fc7561eb8d626d6ee1b71d808b3c0"}});
    CHECK(statusOf(hook.Post(ep.path.c_str(), body, "application/json")) == 401);
  }
  SUBCASE("x crc_token") {
    kind = "twitter";
    const Entry ep = newEntrypoint(
        server, webhookId,
        {{"verification", {{"scheme", "twitter"}, {"secret", "consumer_secret"}}},
         {"handshake", {{"kind", "twitter"}}}});
    auto answer = hook.Get((ep.path + "?crc_token=challenge123").c_str());
    REQUIRE(statusOf(answer) == 200);
    // Python's hmac: base64 HMAC-SHA256("consumer_secret", crc_token).
    CHECK(jsonOf(answer) ==
          json{{"response_token", "sha256=KJvg4WVYYDR3JRI5DWpq8o0K3Bw21U0STQMdMiBJ1j4="}});
  }
  SUBCASE("dropbox challenge") {
    kind = "dropbox";
    const Entry ep =
        newEntrypoint(server, webhookId,
                      {{"verification", {{"scheme", "dropbox"}, {"secret", "app-secret"}}},
                       {"handshake", {{"kind", "dropbox"}}}});
    auto answer = hook.Get((ep.path + "?challenge=abc%20123").c_str());
    REQUIRE(statusOf(answer) == 200);
    CHECK(answer->body == "abc 123");
    CHECK(answer->get_header_value("X-Content-Type-Options") == "nosniff");
  }
  SUBCASE("a GET to an entrypoint without a GET handshake is 405") {
    const Entry ep = newEntrypoint(server, webhookId, json::object());
    auto answer = hook.Get((ep.path + "?challenge=x").c_str());
    CHECK(statusOf(answer) == 405);
    CHECK(errorCode(answer) == "method_not_allowed");
  }
  CHECK(countRows(eventsDb, "events") == 0);
  if (!kind.empty()) {
    auto metrics = hook.Get("/metrics");
    REQUIRE(metrics);
    CHECK(valueIn(metrics->body, "webhooker_ingest_handshakes_total",
                  {{"kind", kind}, {"outcome", "answered"}}) == 1);
  }
}

TEST_CASE("bad verification settings are refused naming the field, and change nothing") {
  TestServer server;
  const auto webhook = server.createWebhook("bad");
  const std::string webhookId = webhook["id"];
  auto admin = server.client();
  const Entry ep = newEntrypoint(server, webhookId,
                                 {{"verification", {{"scheme", "github"}, {"secret", "s"}}}});
  const std::string before = dumpDatabase(server.mainDbPath());
  const json custom = {{"scheme", "custom"}, {"secret", "s"}, {"header", "X-Sig"},
                       {"algorithm", "hmac-sha256"}};
  const auto refusedNaming = [&](const json& body, const std::string& field) {
    CAPTURE(body.dump());
    auto res = patchJson(admin, ep.apiPath, body);
    CHECK(statusOf(res) == 400);
    CHECK(contains(res->body, field));
  };
  refusedNaming({{"verification", with(custom, {{"algorithm", "md5"}})}},
                "verification.algorithm");
  refusedNaming({{"verification", with(custom, {{"content", "{body}.{nonce}"}})}},
                "verification.content");
  refusedNaming({{"verification", with(custom, {{"timestamp_header", "X-Ts"},
                                                        {"content", "{timestamp}.{body}"},
                                                        {"tolerance_seconds", 0}})}},
                "verification.tolerance_seconds");
  refusedNaming({{"verification", with(custom, {{"timestamp_header", "X-Ts"},
                                                        {"tolerance_seconds", -5}})}},
                "verification.tolerance_seconds");
  refusedNaming({{"verification", with(custom, {{"content", "{timestamp}.{body}"}})}},
                "verification.content");
  refusedNaming({{"verification", with(custom, {{"encoding", "base32"}})}},
                "verification.encoding");
  refusedNaming({{"verification", {{"scheme", "twilio"}, {"secret", "s"}}}},
                "verification.public_url");
  refusedNaming({{"verification", {{"scheme", "github"}, {"secret", "s"}, {"header", "X"}}}},
                "verification.header");
  refusedNaming({{"handshake", {{"kind", "slack"}}}}, "handshake");
  refusedNaming({{"handshake", {{"kind", "meta"}}}}, "handshake");
  refusedNaming({{"handshake", {{"kind", "gopher"}}}}, "handshake.kind");
  refusedNaming({{"response", {{"status", 500}}}}, "response.status");
  refusedNaming({{"response", {{"body", std::string(5000, 'x')}}}}, "response.body");
  CHECK(dumpDatabase(server.mainDbPath()) == before);
}

TEST_CASE("a custom scheme and a custom response") {
  TestServer server;
  const auto webhook = server.createWebhook("custom");
  const std::string webhookId = webhook["id"];
  const Entry ep = newEntrypoint(
      server, webhookId,
      {{"verification",
        {{"scheme", "custom"},
         {"secret", "k"},
         {"header", "X-Signature"},
         {"prefix", "sha512="},
         {"algorithm", "hmac-sha512"},
         {"encoding", "base64"},
         {"timestamp_header", "X-Timestamp"},
         {"tolerance_seconds", 60},
         {"content", "{timestamp}|{header:X-Id}|{body}"}}},
       {"response", {{"status", 202}, {"content_type", "application/xml"}, {"body", "<ok/>"}}}});
  auto hook = server.anonymousClient();
  const std::string body = R"({"n":1})";
  const auto signedAt = [&](int64_t t) {
    const std::string ts = std::to_string(t);
    return httplib::Headers{
        {"X-Timestamp", ts},
        {"X-Id", "42"},
        {"X-Signature", "sha512=" + b64(HmacDigest::kSha512, "k", ts + "|42|" + body)}};
  };
  auto ok = hook.Post(ep.path.c_str(), signedAt(unixNow()), body, "application/json");
  REQUIRE(statusOf(ok) == 202);
  CHECK(ok->body == "<ok/>");
  CHECK(ok->get_header_value("Content-Type") == "application/xml");
  // 90 s is beyond this entrypoint's 60.
  CHECK(statusOf(hook.Post(ep.path.c_str(), signedAt(unixNow() - 90), body, "application/json")) ==
        401);
  CHECK(countRows(server.eventsDbPath(webhookId), "events") == 1);
}

TEST_CASE("form bodies: routing and jq see the decoded fields; the stored body stays as sent") {
  HarnessOptions options;
  options.jq = true;
  EngineHarness h(options);
  Receiver deploys, actions;
  const Hook hook = h.createWebhook();
  httplib::Client admin("127.0.0.1", h.port());
  const httplib::Headers auth = {{"Authorization", "Bearer " + std::string(EngineHarness::kToken)}};
  const auto target = [&](const std::string& url, const std::string& filter,
                          const std::string& transform) {
    json fields = {{"name", "t"}, {"type", "http"}, {"config", {{"url", url}}},
                   {"filter", {{"jq", filter}}}, {"transform", {{"jq", transform}}}};
    auto res = admin.Post("/api/v1/webhooks/" + hook.webhookId + "/targets", auth, fields.dump(),
                          "application/json");
    REQUIRE(res);
    INFO(res->body);
    REQUIRE(res->status == 201);
  };
  target(deploys.url("/deploy"), R"(.body.command == "/deploy")", "{env: .body.text, tags: .body.tag}");
  target(actions.url("/action"), R"(.body.type == "block_actions")", "{action: .body.actions[0].value}");

  httplib::Client sender("127.0.0.1", h.port());
  const std::string slash = "command=%2Fdeploy&text=prod&tag=a&tag=b";
  auto first = sender.Post("/hooks/" + hook.entrypointId, slash, "application/x-www-form-urlencoded");
  REQUIRE(first);
  REQUIRE(first->status == 200);
  CHECK(json::parse(first->body)["deliveries"] == 1);
  const std::string interactive =
      "payload=%7B%22type%22%3A%22block_actions%22%2C%22actions%22%3A%5B%7B%22value%22%3A%22approve%22%7D%5D%7D";
  auto second =
      sender.Post("/hooks/" + hook.entrypointId, interactive, "application/x-www-form-urlencoded");
  REQUIRE(second);
  CHECK(json::parse(second->body)["deliveries"] == 1);

  REQUIRE(deploys.waitForRequests(1, std::chrono::seconds(10)));
  REQUIRE(actions.waitForRequests(1, std::chrono::seconds(10)));
  CHECK(json::parse(deploys.requests()[0].body) == json{{"env", "prod"}, {"tags", {"a", "b"}}});
  CHECK(json::parse(actions.requests()[0].body) == json{{"action", "approve"}});
  // The events DB holds the bodies as they came.
  SQLite::Database db = openReadOnly(h.dataDir() / ("events-" + hook.webhookId + ".db"));
  SQLite::Statement q(db, "SELECT body FROM events ORDER BY rowid");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == slash);
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == interactive);
}

TEST_CASE("entrypoints set up before the declarative schemes verify as they did") {
  TempDir dir;
  const auto file = dir / "webhooker.db";
  {
    // The schema as it was (up to 0007), with a GitHub-verified entrypoint.
    const auto before = mainMigrations().first(7);
    auto db = storage::openDatabase(file, DbOptions{}, before);
    REQUIRE(db);
    db.value()->exec(
        "INSERT INTO webhooks (id, name, created_at, updated_at) VALUES ('w', 'old', 't', 't');"
        "INSERT INTO entrypoints (id, webhook_id, created_at, updated_at, verification, "
        "verification_secret) VALUES ('e', 'w', 't', 't', 'github', 'It''s a Secret to Everybody')");
  }
  SystemClock clock;
  auto store = MainStore::open(file, DbOptions{}, clock);
  REQUIRE(store);
  auto entrypoint = store.value()->getEntrypoint("e");
  REQUIRE(entrypoint);
  CHECK(entrypoint->verification == webhooker::VerificationScheme::kGithub);
  const InboundSettings inbound = inboundSettingsOf(entrypoint.value());
  CHECK_FALSE(inbound.unusable);
  REQUIRE(inbound.scheme);
  const Headers signature{
      {"X-Hub-Signature-256",
       "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"}};
  const HeaderLookup lookup = lookupIn(signature);
  CHECK(verifyRequest(inbound.scheme, inbound.secrets,
                      InboundRequest{lookup, "Hello, World!", "/hooks/e", ""}, at(0)));
  CHECK(verifyRequest(inbound.scheme, inbound.secrets,
                      InboundRequest{lookup, "Hello, World?", "/hooks/e", ""}, at(0))
            .error()
            .code == "bad_signature");
}
