// Standard Webhooks signing end to end: an http target with a signing_secret
// delivers to a loopback receiver with webhook-id, webhook-timestamp and
// webhook-signature. The signature is recomputed here with the openssl
// command line, not with webhooker's code, so a bug shared by signer and
// checker cannot hide.
#include <doctest/doctest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/time_format.h"
#include "tests/support/engine_harness.h"
#include "tests/support/receiver.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// Only base64 characters after the prefix, so it is safe inside '...' in sh.
constexpr const char* kSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

std::string runCommand(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) throw std::runtime_error("popen failed: " + command);
  std::string out;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe.get()) != nullptr) out += buffer;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// "v1,<base64>" computed by openssl(1) from the secret's base64 key part.
std::string opensslSignature(const TempDir& dir, const std::string& secret,
                             const std::string& msgId, const std::string& timestamp,
                             const std::string& body) {
  const auto file = dir / "signed-content";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << msgId << '.' << timestamp << '.' << body;
  }
  const std::string keyBase64 = secret.substr(std::string("whsec_").size());
  const std::string command = "openssl dgst -sha256 -mac HMAC -macopt hexkey:$(printf %s '" +
                              keyBase64 + "' | base64 -d | xxd -p -c 256) -binary '" +
                              file.string() + "' | base64 -w0";
  return "v1," + runCommand(command);
}

int64_t nowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_CASE("the openssl oracle reproduces the Standard Webhooks test vector") {
  TempDir dir;
  CHECK(opensslSignature(dir, kSecret, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330",
                         R"({"test": 2432232314})") ==
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST_CASE("a signed delivery carries webhook-id, -timestamp and a signature openssl agrees with") {
  EngineHarness h;
  Receiver r;
  TempDir dir;
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/in"), {}, 4, 5000,
                                                 json{{"signing_secret", kSecret}});
  const std::string body = R"({"order":42,"note":"caf\u00e9 & \"quotes\""})";
  // A sender's own Standard Webhooks headers must not survive: ours win.
  const std::string eventId =
      h.post(hook.entrypointId, body, "application/json",
             {{"webhook-id", "msg_forged"}, {"Webhook-Signature", "v1,forged"},
              {"webhook-timestamp", "1"}, {"X-Kept", "yes"}});
  const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, target.id);
  REQUIRE(h.waitForStatus(d, "delivered", 10s));

  const auto requests = r.requests();
  REQUIRE(requests.size() == 1);
  const ReceivedRequest& req = requests[0];
  CHECK(req.body == body);
  CHECK(req.header("X-Kept") == "yes");
  CHECK(req.headerCount("webhook-id") == 1);
  CHECK(req.headerCount("webhook-timestamp") == 1);
  CHECK(req.headerCount("webhook-signature") == 1);
  CHECK(req.header("webhook-id") == "msg_" + d.id);
  const std::string timestamp = req.header("webhook-timestamp");
  REQUIRE_FALSE(timestamp.empty());
  CHECK(std::llabs(std::stoll(timestamp) - nowSeconds()) < 60);
  CHECK(req.header("webhook-signature") ==
        opensslSignature(dir, kSecret, req.header("webhook-id"), timestamp, req.body));
}

TEST_CASE("without a signing_secret nothing is signed and the sender's headers pass through") {
  EngineHarness h;
  Receiver r;
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/in"));
  const std::string eventId =
      h.post(hook.entrypointId, "{}", "application/json", {{"webhook-id", "msg_sender"}});
  const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, target.id);
  REQUIRE(h.waitForStatus(d, "delivered", 10s));
  const auto requests = r.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].header("webhook-id") == "msg_sender");
  CHECK_FALSE(requests[0].hasHeader("webhook-signature"));
  CHECK_FALSE(requests[0].hasHeader("webhook-timestamp"));
}

TEST_CASE("a retry keeps the webhook-id and signs its own timestamp") {
  EngineHarness h;
  Receiver r;
  TempDir dir;
  r.script({respond(503)});
  const Hook hook = h.createWebhook();
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, r.url("/in"), retryPolicy(5, 200), 4, 5000,
                         json{{"signing_secret", kSecret}});
  const std::string eventId = h.post(hook.entrypointId, R"({"n":1})");
  const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, target.id);
  REQUIRE(h.waitForStatus(d, "delivered", 10s));

  const auto requests = r.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].header("webhook-id") == "msg_" + d.id);
  CHECK(requests[1].header("webhook-id") == requests[0].header("webhook-id"));
  for (const ReceivedRequest& req : requests) {
    CHECK(req.header("webhook-signature") ==
          opensslSignature(dir, kSecret, req.header("webhook-id"),
                           req.header("webhook-timestamp"), req.body));
  }
  // The timestamp is the attempt's, never earlier than the first one's.
  CHECK(std::stoll(requests[1].header("webhook-timestamp")) >=
        std::stoll(requests[0].header("webhook-timestamp")));
}

TEST_CASE("a redrive (admin retry) of a failed delivery keeps its webhook-id") {
  EngineHarness h;
  Receiver r;
  TempDir dir;
  r.script({respond(503)});
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, r.url("/in"), retryPolicy(0, 200),
                                                 4, 5000, json{{"signing_secret", kSecret}});
  const std::string eventId = h.post(hook.entrypointId, R"({"again":1})");
  const DeliveryRef d = h.deliveryOf(hook.webhookId, eventId, target.id);
  REQUIRE(h.waitForStatus(d, "failed", 10s));

  httplib::Client c("127.0.0.1", h.port());
  const auto res =
      c.Post("/api/v1/webhooks/" + hook.webhookId + "/deliveries/" + d.id + "/retry",
             {{"Authorization", "Bearer " + std::string(EngineHarness::kToken)}}, "",
             "application/json");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  REQUIRE(h.waitForStatus(d, "delivered", 10s));

  const auto requests = r.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].header("webhook-id") == "msg_" + d.id);
  CHECK(requests[1].header("webhook-id") == requests[0].header("webhook-id"));
  CHECK(requests[1].header("webhook-signature") ==
        opensslSignature(dir, kSecret, requests[1].header("webhook-id"),
                         requests[1].header("webhook-timestamp"), requests[1].body));
}

TEST_CASE("during a rotation both secrets sign; after the expiry only the new one") {
  EngineHarness h;
  Receiver r;
  TempDir dir;
  const std::string newSecret = "whsec_" + std::string(43, 'B') + "=";  // 32 bytes
  const std::string future = formatTime(std::chrono::system_clock::now() + std::chrono::hours(1));
  const std::string past = formatTime(std::chrono::system_clock::now() - std::chrono::hours(1));
  const Hook hook = h.createWebhook();
  const TargetRecord rotating = h.createHttpTarget(
      hook.webhookId, r.url("/rotating"), {}, 4, 5000,
      json{{"signing_secret", newSecret}, {"previous_signing_secret", kSecret},
           {"previous_secret_expires_at", future}});
  const TargetRecord expired = h.createHttpTarget(
      hook.webhookId, r.url("/expired"), {}, 4, 5000,
      json{{"signing_secret", newSecret}, {"previous_signing_secret", kSecret},
           {"previous_secret_expires_at", past}});
  const std::string eventId = h.post(hook.entrypointId, R"({"rotate":true})");
  REQUIRE(h.waitForStatus(h.deliveryOf(hook.webhookId, eventId, rotating.id), "delivered", 10s));
  REQUIRE(h.waitForStatus(h.deliveryOf(hook.webhookId, eventId, expired.id), "delivered", 10s));

  const auto requests = r.requests();
  REQUIRE(requests.size() == 2);
  for (const ReceivedRequest& req : requests) {
    CAPTURE(req.path);
    const std::string id = req.header("webhook-id");
    const std::string ts = req.header("webhook-timestamp");
    const std::string signedNew = opensslSignature(dir, newSecret, id, ts, req.body);
    const std::string signedOld = opensslSignature(dir, kSecret, id, ts, req.body);
    if (req.path == "/rotating")
      CHECK(req.header("webhook-signature") == signedNew + " " + signedOld);
    else
      CHECK(req.header("webhook-signature") == signedNew);
  }
}

TEST_CASE("replacing the secret through the admin API keeps the old one for 24 h") {
  EngineHarness h;
  const Hook hook = h.createWebhook();
  const TargetRecord target = h.createHttpTarget(hook.webhookId, "https://example.com/", {}, 4,
                                                 5000, json{{"signing_secret", kSecret}});
  const std::string newSecret = "whsec_" + std::string(43, 'C') + "=";
  httplib::Client c("127.0.0.1", h.port());
  const auto res = c.Patch("/api/v1/webhooks/" + hook.webhookId + "/targets/" + target.id,
                           {{"Authorization", "Bearer " + std::string(EngineHarness::kToken)}},
                           json{{"config", {{"signing_secret", newSecret}}}}.dump(),
                           "application/json");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  const json shown = json::parse(res->body);
  CHECK(shown["config"]["signing_secret"] == "[redacted]");
  CHECK(shown["config"]["previous_signing_secret"] == "[redacted]");
  CHECK(res->body.find(kSecret) == std::string::npos);

  const json stored = json::parse(h.store().getTarget(hook.webhookId, target.id)->configJson);
  CHECK(stored["signing_secret"] == newSecret);
  CHECK(stored["previous_signing_secret"] == kSecret);
  const auto expires = parseTime(stored["previous_secret_expires_at"].get<std::string>());
  REQUIRE(expires);
  const auto in = *expires - std::chrono::system_clock::now();
  CHECK(in > std::chrono::hours(23));
  CHECK(in <= std::chrono::hours(24));
}

}  // namespace webhooker::testing
