// Deleting a webhook while its deliveries are still being retried: the
// admin API removes its events DB, the engine drops what it still holds for
// it, and nothing brings the file back — not a retry timer firing, not the
// sweep, not a late ingest. A webhook moving out to another node lets go of
// its retries at once, so none outlives the source's copy.
#include <doctest/doctest.h>

#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/support/engine_harness.h"
#include "tests/support/receiver.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;

bool anyFileOf(const std::filesystem::path& db) {
  for (const char* suffix : {"", "-wal", "-shm"})
    if (std::filesystem::exists(db.string() + suffix)) return true;
  return false;
}

}  // namespace

TEST_CASE("deleting a webhook with retrying deliveries stops them and leaves no events file") {
  HarnessOptions options;
  options.breakerThreshold = 1'000'000;  // keep the attempts coming: no breaker pause
  options.sweepInterval = 50ms;
  EngineHarness h(options);
  Receiver receiver;
  receiver.setDefault(respond(503));
  const Hook hook = h.createWebhook();
  const Hook other = h.createWebhook("other");
  h.createHttpTarget(hook.webhookId, receiver.url("/doomed"), retryPolicy(1000, 30, 0.0, 60));
  for (int i = 0; i < 5; ++i) h.post(hook.entrypointId, "{\"n\": " + std::to_string(i) + "}");
  h.post(other.entrypointId, "{\"kept\": true}");
  // Every delivery is in the retry loop: some waiting on a timer, some in flight.
  REQUIRE(receiver.waitForRequests(20, 10s));
  const auto file = h.eventsDbPath(hook.webhookId);
  REQUIRE(std::filesystem::exists(file));

  httplib::Client admin("127.0.0.1", h.port());
  admin.set_bearer_token_auth(EngineHarness::kToken);
  auto deleted = admin.Delete("/api/v1/webhooks/" + hook.webhookId);
  REQUIRE(deleted);
  CHECK(deleted->status == 204);

  // Attempts in flight at the delete may still finish; after that nothing
  // goes out, and every retry the engine held is let go.
  CHECK(eventually([&] { return h.engine().heldCount() == 0; }));
  CHECK(eventually([&] { return receiver.inFlight() == 0; }));
  const size_t settled = receiver.requestCount();
  // Many retry intervals and sweeps later: the engine has had every chance
  // to touch the webhook again.
  std::this_thread::sleep_for(500ms);
  CHECK(receiver.requestCount() == settled);
  CHECK(h.engine().heldCount() == 0);
  CHECK_FALSE(anyFileOf(file));

  // The pool refuses the id; a late sender gets a 404 and creates nothing.
  auto reopened = h.eventsDbs().get(hook.webhookId);
  REQUIRE_FALSE(reopened.ok());
  CHECK(reopened.error().code == "not_found");
  httplib::Client sender("127.0.0.1", h.port());
  auto late = sender.Post("/hooks/" + hook.entrypointId, "{}", "application/json");
  REQUIRE(late);
  CHECK(late->status == 404);
  CHECK_FALSE(anyFileOf(file));

  // The other webhook is untouched.
  CHECK(std::filesystem::exists(h.eventsDbPath(other.webhookId)));
}

TEST_CASE("a webhook moving out lets go at once of the retries it holds, so none outlives "
          "the move") {
  EngineHarness h;
  Receiver receiver;
  receiver.setDefault(respond(503));
  const Hook hook = h.createWebhook();
  // A minute to the next attempt: held by the retry timer all the while.
  const TargetRecord target =
      h.createHttpTarget(hook.webhookId, receiver.url("/"), retryPolicy(5, 60'000));
  const DeliveryRef d = h.deliveryOf(hook.webhookId, h.post(hook.entrypointId, "{}"), target.id);
  REQUIRE(h.waitForStatus(d, "retrying", 5s));
  REQUIRE(h.engine().heldCount() == 1);

  REQUIRE(h.store().setWebhookMovingTo(hook.webhookId, "b"));
  h.engine().targetChanged(hook.webhookId, target.id);
  CHECK(eventually([&] { return h.engine().heldCount() == 0; }));
  // Let go, not attempted: the row still waits for the node it moves to.
  CHECK(receiver.requestCount() == 1);
  CHECK(h.delivery(d).status == "retrying");
}

}  // namespace webhooker::testing
