// The documentation's sqlite3 recipes, run as written: every `sqlite3 ...`
// command in a code block of README.md and docs/*.md (found at run time, so
// a new recipe is tested without touching this file) runs with the real
// sqlite3 CLI, through bash, against a data folder the real daemon filled
// with delivered, dead-lettered and retrying deliveries. A renamed column or view fails
// here, not in a reader's terminal.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/doc_commands.h"
#include "tests/support/receiver.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::vector<DocCommand> documentedRecipes() {
  std::vector<DocCommand> recipes;
  for (const std::filesystem::path& file : documentationFiles())
    for (DocCommand& r : docCommands(file, "", [](const std::string& line) {
           return line.starts_with("sqlite3 ");
         }))
      recipes.push_back(std::move(r));
  return recipes;
}

// Polls the admin API until the webhook's deliveries have these statuses
// (status → count), with a deadline far beyond what they need.
bool waitForStatuses(const DaemonApi& api, const std::string& webhookId,
                     const std::map<std::string, int>& expected) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto res = api.admin().Get("/api/v1/webhooks/" + webhookId + "/deliveries?limit=500");
    if (res && res->status == 200) {
      const json answer = json::parse(res->body);
      std::map<std::string, int> counts;
      for (const json& d : answer["deliveries"]) ++counts[d["status"].get<std::string>()];
      if (counts == expected) return true;
    }
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

}  // namespace

TEST_CASE("every sqlite3 recipe of the documentation runs against a real data folder") {
  const std::vector<DocCommand> recipes = documentedRecipes();
  // The README's walk-through and docs/operations.md's recipes hold a
  // dozen; finding far fewer means the extraction broke, not the recipes.
  REQUIRE(recipes.size() >= 10);

  // The recipes say `data/...` and `$D/...`: the data folder is `data` in
  // the folder they run in.
  TempDir dir;
  const std::filesystem::path data = dir / "data";
  std::filesystem::create_directory(data);
  DaemonProcess daemon(data, {.args = {"--allow-networks", "127.0.0.1/32"},
                              .env = {DaemonApi::adminTokenEnv()}});
  const DaemonApi api(daemon.url());
  Receiver ok;
  Receiver broken;
  broken.setDefault(respond(500));
  const json webhook = api.createWebhook("shop");
  const std::string webhookId = webhook["id"];
  api.createTarget(webhookId, {{"name", "orders"},
                               {"type", "http"},
                               {"config", {{"url", ok.url("/hook")}}}});
  api.createTarget(webhookId, {{"name", "broken"},
                               {"type", "http"},
                               {"config", {{"url", broken.url("/hook")}}},
                               {"retry", {{"max_retries", 0}}}});
  // Down: its deliveries wait for a retry, so the backlog recipes show rows.
  api.createTarget(webhookId,
                   {{"name", "down"},
                    {"type", "http"},
                    {"config",
                     {{"url", "http://127.0.0.1:" + std::to_string(unusedLoopbackPort()) + "/"}}},
                    {"retry", {{"max_retries", 5}, {"base_delay_ms", 60'000}}}});
  // The README's two events: JSON, and bytes that are not text.
  auto sender = api.sender();
  auto first = sender.Post(DaemonApi::hookPath(webhook), R"({"order": 42})", "application/json");
  REQUIRE(first);
  REQUIRE(first->status == 200);
  const std::string eventId = json::parse(first->body)["event_id"];
  auto second = sender.Post(DaemonApi::hookPath(webhook), std::string("\x00\xff\xfe binary", 10),
                            "application/octet-stream");
  REQUIRE(second);
  REQUIRE(second->status == 200);
  REQUIRE(waitForStatuses(api, webhookId, {{"delivered", 2}, {"failed", 2}, {"retrying", 2}}));

  // The CLI the recipes call (`webhooker history-view`) on the PATH, as the
  // README's walk-through puts it there.
  const char* path = std::getenv("PATH");
  const std::vector<std::string> env = {
      "D=data", "WH=" + webhookId, "EV=" + eventId,
      "PATH=" + std::filesystem::path(webhookerBin()).parent_path().string() + ":" +
          (path ? path : "/usr/bin:/bin")};
  for (const DocCommand& recipe : recipes) {
    CAPTURE(recipe.where);
    CAPTURE(recipe.command);
    const CommandResult r =
        runCommand({"bash", "-c", "cd '" + dir.path().string() + "' && " + recipe.command}, env);
    CHECK(r.exitCode == 0);
    CHECK(r.err == "");
    CHECK_FALSE(r.out.empty());  // the data above gives every recipe something to show
  }
}

}  // namespace webhooker::testing
