// The real binary, end to end: first start and the admin token, restart,
// SIGTERM, `migrate`, `admin-token --reset` and the management CLI — each
// test runs `webhooker` as a child process on its own data folder.
#include <doctest/doctest.h>
#include <httplib.h>
#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/contains.h"
#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/eventually.h"
#include "tests/support/receiver.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text_pattern.h"

namespace webhooker::testing {
namespace {

using nlohmann::json;

constexpr const char* kNoSuchWebhook = "00000000-0000-4000-8000-000000000000";

httplib::Client apiClient(const DaemonProcess& daemon, const std::string& token) {
  httplib::Client client(daemon.url());
  client.set_connection_timeout(std::chrono::seconds(5));
  client.set_read_timeout(std::chrono::seconds(10));
  if (!token.empty()) client.set_bearer_token_auth(token);
  return client;
}

// The status of GET /api/v1/webhooks with `token`; -1 if nothing answered.
int listStatus(const DaemonProcess& daemon, const std::string& token) {
  auto res = apiClient(daemon, token).Get("/api/v1/webhooks");
  return res ? res->status : -1;
}

json parseBody(const httplib::Result& res) {
  REQUIRE(res);
  return json::parse(res->body);
}

json createWebhook(httplib::Client& api, const std::string& name) {
  auto res = api.Post("/api/v1/webhooks", json{{"name", name}}.dump(), "application/json");
  REQUIRE(res);
  REQUIRE(res->status == 201);
  return json::parse(res->body);
}

std::filesystem::path eventsDbPath(const TempDir& dir, const std::string& webhookId) {
  return dir / ("events-" + webhookId + ".db");
}

// Every schema_migrations row, to compare a file before and after.
std::vector<std::string> migrationRows(const std::filesystem::path& file) {
  SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
  SQLite::Statement q(db,
                      "SELECT version, name, applied_at FROM schema_migrations ORDER BY version");
  std::vector<std::string> rows;
  while (q.executeStep())
    rows.push_back(q.getColumn(0).getString() + "|" + q.getColumn(1).getString() + "|" +
                   q.getColumn(2).getString());
  return rows;
}

std::string describe(const CommandResult& r) {
  return "exit " + std::to_string(r.exitCode) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

// Every distinct whk_ token in a command's output.
std::set<std::string> printedTokens(const std::string& text) {
  const std::vector<std::string> tokens = allMatches(text, R"(whk_[A-Za-z0-9_-]+)");
  return {tokens.begin(), tokens.end()};
}

// The permission bits of a file or folder.
unsigned modeOf(const std::filesystem::path& path) {
  struct stat st {};
  REQUIRE_MESSAGE(::stat(path.c_str(), &st) == 0, path.string());
  return st.st_mode & 07777;
}

// `webhooker serve` with stdout and stderr on a pseudo-terminal, as started
// from an interactive shell: what the terminal showed up to the listening
// line. The daemon is stopped before this returns.
std::string firstStartOnTerminal(const std::filesystem::path& dataDir) {
  Fd terminal(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  REQUIRE(terminal.get() >= 0);
  REQUIRE(::grantpt(terminal.get()) == 0);
  REQUIRE(::unlockpt(terminal.get()) == 0);
  Fd side(::open(::ptsname(terminal.get()), O_RDWR | O_NOCTTY | O_CLOEXEC));
  REQUIRE(side.get() >= 0);
  const pid_t pid = spawnChild(
      {webhookerBin(), "serve", "--port", "0", "--data-dir", dataDir.string()}, {}, side.get(),
      side.get());
  side.reset();
  std::string shown;
  bool open = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (open && !contains(shown, "webhooker listening") &&
         std::chrono::steady_clock::now() < deadline) {
    pollfd p{terminal.get(), POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) appendAvailable(terminal.get(), shown, open);
  }
  ::kill(pid, SIGTERM);
  if (!waitFor(pid, std::chrono::seconds(10))) {
    ::kill(pid, SIGKILL);
    waitFor(pid, std::chrono::seconds(10));
  }
  return shown;
}

}  // namespace

TEST_CASE("the first start writes the admin token to a private file, never to its output") {
  TempDir dir;
  const auto tokenFile = dir / "admin-token.txt";
  std::string token;
  {
    DaemonProcess daemon(dir.path());
    REQUIRE(daemon.adminToken());  // read from the file
    token = *daemon.adminToken();
    CHECK(token.rfind("whk_", 0) == 0);
    CHECK(modeOf(tokenFile) == 0600);
    // Neither stream is a terminal here: both may end up in a log.
    CHECK(printedTokens(daemon.stdoutText()).empty());
    CHECK(contains(daemon.stdoutText(),
                   "webhooker listening on http://127.0.0.1:" + std::to_string(daemon.port())));
    CHECK(listStatus(daemon, token) == 200);
    REQUIRE(daemon.stop() == 0);
    const std::string log = daemon.stderrText();
    CHECK(contains(log, "daemon.admin_token_written path=" + tokenFile.string()));
    CHECK_FALSE(contains(log, token));
  }
  std::filesystem::remove(tokenFile);  // what the operator does once it is read
  DaemonProcess again(dir.path());
  CHECK_FALSE(again.adminToken());
  CHECK_FALSE(std::filesystem::exists(tokenFile));
  CHECK_FALSE(contains(again.stdoutText(), "whk_"));
  CHECK(listStatus(again, token) == 200);  // the stored hash still matches
}

TEST_CASE("a first start from a terminal shows the admin token there and writes no file") {
  TempDir dir;
  const std::string shown = firstStartOnTerminal(dir.path());
  const auto tokens = printedTokens(shown);
  REQUIRE_MESSAGE(tokens.size() == 1, shown);
  CHECK_FALSE(std::filesystem::exists(dir / "admin-token.txt"));
  DaemonProcess daemon(dir.path());
  CHECK(listStatus(daemon, *tokens.begin()) == 200);
}

TEST_CASE("WEBHOOKER_ADMIN_TOKEN sets the admin token") {
  TempDir dir;
  const std::string token = "fixed-admin-token-0123456789";
  DaemonOptions options;
  options.env = {"WEBHOOKER_ADMIN_TOKEN=" + token};
  DaemonProcess daemon(dir.path(), options);
  CHECK_FALSE(daemon.adminToken());  // nothing generated, nothing printed
  CHECK(listStatus(daemon, token) == 200);
  CHECK(listStatus(daemon, "another-admin-token-0123456789") == 401);
  CHECK(listStatus(daemon, "") == 401);
  CHECK_FALSE(contains(daemon.stderrText(), token));
}

TEST_CASE("admin-token --reset takes effect on the running daemon") {
  TempDir dir;
  DaemonProcess daemon(dir.path());
  REQUIRE(daemon.adminToken());
  const std::string oldToken = *daemon.adminToken();
  REQUIRE(listStatus(daemon, oldToken) == 200);

  const auto reset = runWebhooker({"admin-token", "--reset", "--data-dir", dir.path().string()});
  REQUIRE_MESSAGE(reset.exitCode == 0, describe(reset));
  const auto printed = printedTokens(reset.out);
  REQUIRE(printed.size() == 1);
  const std::string newToken = *printed.begin();
  CHECK(newToken != oldToken);
  // The file the first start handed the old token over in is gone with it.
  CHECK_FALSE(std::filesystem::exists(dir / "admin-token.txt"));
  CHECK(contains(reset.out, "which held the old token"));
  CHECK(listStatus(daemon, oldToken) == 401);
  CHECK(listStatus(daemon, newToken) == 200);
}

TEST_CASE("migrate on an up-to-date data folder reports it and changes nothing") {
  TempDir dir;
  DaemonProcess daemon(dir.path());
  REQUIRE(daemon.adminToken());
  auto api = apiClient(daemon, *daemon.adminToken());
  const json webhook = createWebhook(api, "shop");
  const auto webhookId = webhook["id"].get<std::string>();
  // An event, so the webhook has its events file.
  auto posted =
      apiClient(daemon, "")
          .Post(webhook["entrypoints"][0]["url"].get<std::string>(), "{}", "application/json");
  REQUIRE(posted);
  REQUIRE(posted->status == 200);
  const auto mainDb = dir / "webhooker.db";
  const auto eventsDb = eventsDbPath(dir, webhookId);
  const auto mainBefore = migrationRows(mainDb);
  const auto eventsBefore = migrationRows(eventsDb);
  REQUIRE_FALSE(mainBefore.empty());
  REQUIRE_FALSE(eventsBefore.empty());

  // Documented to be safe next to a running daemon.
  const auto migrate = runWebhooker({"migrate", "--data-dir", dir.path().string()});
  CHECK_MESSAGE(migrate.exitCode == 0, describe(migrate));
  CHECK(contains(migrate.out, "webhooker.db: up to date"));
  CHECK(contains(migrate.out, "events-" + webhookId + ".db: up to date"));
  CHECK(migrationRows(mainDb) == mainBefore);
  CHECK(migrationRows(eventsDb) == eventsBefore);
  CHECK(listStatus(daemon, *daemon.adminToken()) == 200);
}

TEST_CASE("a restart keeps webhooks, targets and stored events") {
  TempDir dir;
  std::string token, webhookId, targetId, eventId;
  const std::string body = R"({"order": 42})";
  {
    DaemonProcess daemon(dir.path());
    REQUIRE(daemon.adminToken());
    token = *daemon.adminToken();
    auto api = apiClient(daemon, token);
    const json webhook = createWebhook(api, "shop");
    webhookId = webhook["id"].get<std::string>();
    const json target = {{"name", "orders"},
                         {"type", "http"},
                         {"config", {{"url", "https://receiver.example/hook"}}}};
    auto created = api.Post("/api/v1/webhooks/" + webhookId + "/targets", target.dump(),
                            "application/json");
    REQUIRE(created);
    REQUIRE(created->status == 201);
    targetId = json::parse(created->body)["id"].get<std::string>();

    const auto hook = webhook["entrypoints"][0]["url"].get<std::string>();
    auto ingested = apiClient(daemon, "").Post(hook, body, "application/json");
    REQUIRE(ingested);
    REQUIRE(ingested->status == 200);
    eventId = json::parse(ingested->body)["event_id"].get<std::string>();
    REQUIRE(daemon.stop() == 0);
    // A clean stop empties every WAL into its file: the data is in the .db files.
    for (const auto& file : {dir / "webhooker.db", eventsDbPath(dir, webhookId)}) {
      const std::string wal = file.string() + "-wal";
      CAPTURE(wal);
      CHECK((!std::filesystem::exists(wal) || std::filesystem::file_size(wal) == 0));
    }
  }

  DaemonProcess daemon(dir.path());
  auto api = apiClient(daemon, token);
  const json webhooks = parseBody(api.Get("/api/v1/webhooks"))["webhooks"];
  REQUIRE(webhooks.size() == 1);
  CHECK(webhooks[0]["id"] == webhookId);
  CHECK(webhooks[0]["name"] == "shop");
  const json targets = parseBody(api.Get("/api/v1/webhooks/" + webhookId + "/targets"))["targets"];
  REQUIRE(targets.size() == 1);
  CHECK(targets[0]["id"] == targetId);
  CHECK(targets[0]["config"]["url"] == "https://receiver.example/hook");

  SQLite::Database events(eventsDbPath(dir, webhookId).string(), SQLite::OPEN_READONLY);
  // The restarted daemon's start-up passes read the file alone for a moment
  // (docs/decisions.md: another reader waits, or without a timeout is refused).
  events.setBusyTimeout(5000);
  SQLite::Statement q(events, "SELECT body FROM events WHERE id = ?");
  q.bind(1, eventId);
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(0).getString() == body);
}

TEST_CASE("the daemon's threads carry the names of their parts; the main thread the program's") {
  TempDir dir;
  DaemonProcess daemon(dir.path());
  REQUIRE(daemon.adminToken());
  auto api = apiClient(daemon, *daemon.adminToken());
  const json webhook = createWebhook(api, "named");
  // An ingest opens an events DB: its commits run on the shared commit threads.
  auto ingested = apiClient(daemon, "")
                      .Post(webhook["entrypoints"][0]["url"].get<std::string>(), R"({"n": 1})",
                            "application/json");
  REQUIRE(ingested);
  REQUIRE(ingested->status == 200);

  const auto names = [&] {
    std::multiset<std::string> found;
    const auto tasks = std::filesystem::path("/proc") / std::to_string(daemon.pid()) / "task";
    for (const auto& task : std::filesystem::directory_iterator(tasks)) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      if (std::getline(comm, name)) found.insert(name);
    }
    return found;
  }();
  CHECK(names.count("webhooker") == 1);  // the main thread only: pgrep finds the program
  for (const char* shared : {"wh-worker", "wh-commit", "wh-flush"})
    CHECK_MESSAGE(names.count(shared) >= 1, shared);
  for (const char* part : {"wh-refill", "wh-sweep", "wh-sampler", "wh-retention"})
    CHECK_MESSAGE(names.count(part) == 1, part);
}

TEST_CASE("SIGTERM stops ingest and the daemon exits 0 within seconds") {
  TempDir dir;
  DaemonProcess daemon(dir.path());
  REQUIRE(daemon.adminToken());
  auto api = apiClient(daemon, *daemon.adminToken());
  const auto hook = createWebhook(api, "shop")["entrypoints"][0]["url"].get<std::string>();
  auto ingest = apiClient(daemon, "");
  auto before = ingest.Post(hook, "{}", "application/json");
  REQUIRE(before);
  REQUIRE(before->status == 200);

  // The real binary's clock cannot be set, so the bound is one only a hang
  // reaches: at it stop() kills the daemon, and the exit is no longer 0.
  const auto start = std::chrono::steady_clock::now();
  CHECK(daemon.stop(std::chrono::seconds(30)) == 0);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  auto after = apiClient(daemon, "").Post(hook, "{}", "application/json");
  CHECK_FALSE(after);  // nobody listens any more
  const std::string log = daemon.stderrText();
  CHECK(contains(log, "daemon.stopping signal=SIGTERM"));
  CHECK(contains(log, "daemon.stopped"));
}

TEST_CASE("SIGTERM: new events get 503 while the attempt in flight finishes and is recorded") {
  TempDir dir;
  Receiver receiver;
  receiver.push(respondAfter(std::chrono::seconds(2)));  // the attempt in flight
  DaemonOptions options;
  options.env = {"WEBHOOKER_ALLOW_NETWORKS=127.0.0.0/8"};
  DaemonProcess daemon(dir.path(), options);
  REQUIRE(daemon.adminToken());
  auto api = apiClient(daemon, *daemon.adminToken());
  const json webhook = createWebhook(api, "shop");
  const std::string webhookId = webhook["id"].get<std::string>();
  const std::string hook = webhook["entrypoints"][0]["url"].get<std::string>();
  auto target = api.Post("/api/v1/webhooks/" + webhookId + "/targets",
                         json{{"name", "slow"},
                              {"type", "http"},
                              {"config", {{"url", receiver.url("/slow")}, {"timeout_ms", 8000}}}}
                             .dump(),
                         "application/json");
  REQUIRE(target);
  REQUIRE(target->status == 201);
  auto ingest = apiClient(daemon, "");
  auto first = ingest.Post(hook, R"({"n": 1})", "application/json");
  REQUIRE(first);
  REQUIRE(first->status == 200);
  REQUIRE(receiver.waitForRequests(1, std::chrono::seconds(10)));

  ::kill(daemon.pid(), SIGTERM);
  // Until the daemon has seen the signal an event may still be taken; then
  // the answer is 503, never silence.
  int refused = -1;
  int taken = 1;
  for (int i = 0; i < 50 && refused == -1; ++i) {
    auto res = ingest.Post(hook, R"({"n": 2})", "application/json");
    REQUIRE(res);
    if (res->status == 200) ++taken;
    else refused = res->status;
  }
  CHECK(refused == 503);
  CHECK(daemon.stop(std::chrono::seconds(30)) == 0);

  SQLite::Database db(eventsDbPath(dir, webhookId).string(), SQLite::OPEN_READONLY);
  CHECK(db.execAndGet("SELECT COUNT(*) FROM events").getInt() == taken);
  SQLite::Statement firstDelivery(db, "SELECT status FROM deliveries WHERE event_id = ?");
  firstDelivery.bind(1, json::parse(first->body)["event_id"].get<std::string>());
  REQUIRE(firstDelivery.executeStep());
  CHECK(firstDelivery.getColumn(0).getString() == "delivered");
}

TEST_CASE("the CLI manages webhooks and targets through the admin API") {
  TempDir dir;
  DaemonProcess daemon(dir.path());
  REQUIRE(daemon.adminToken());
  const std::string token = *daemon.adminToken();
  const std::vector<std::string> env = {"WEBHOOKER_TOKEN=" + token};
  const std::vector<std::string> envWithUrl = {"WEBHOOKER_TOKEN=" + token,
                                               "WEBHOOKER_URL=" + daemon.url()};
  std::vector<CommandResult> runs;  // all of them, to check none shows the token
  auto run = [&](std::vector<std::string> args, const std::vector<std::string>& childEnv) {
    runs.push_back(runWebhooker(std::move(args), childEnv));
    return runs.back();
  };

  const auto created = run({"webhooks", "create", "--name", "shop", "--url", daemon.url()}, env);
  REQUIRE_MESSAGE(created.exitCode == 0, describe(created));
  // Shown as pretty JSON, so it parses.
  const auto webhookId = json::parse(created.out)["id"].get<std::string>();

  const auto list = run({"webhooks", "list", "--url", daemon.url()}, env);
  CHECK_MESSAGE(list.exitCode == 0, describe(list));
  CHECK(firstMatch(list.out, webhookId + " +shop +30 +1\n"));

  // --url after the verb is the daemon's, as everywhere.
  const auto target = run({"targets", "create", webhookId, "--name", "t", "--type", "http",
                           "--target-url", "https://example.com/x", "--header",
                           "User-Agent: shop-cli/1", "--url", daemon.url()},
                          env);
  REQUIRE_MESSAGE(target.exitCode == 0, describe(target));
  const auto targetId = json::parse(target.out)["id"].get<std::string>();

  const auto shown =
      run({"targets", "show", webhookId, targetId, "--json", "--url", daemon.url()}, env);
  REQUIRE_MESSAGE(shown.exitCode == 0, describe(shown));
  const json shownJson = json::parse(shown.out);
  CHECK(shownJson["name"] == "t");
  CHECK(shownJson["type"] == "http");
  CHECK(shownJson["config"]["url"] == "https://example.com/x");
  CHECK(shownJson["config"]["headers"]["User-Agent"] == "shop-cli/1");

  const auto off = run({"targets", "deactivate", webhookId, targetId}, envWithUrl);
  REQUIRE_MESSAGE(off.exitCode == 0, describe(off));
  CHECK(json::parse(off.out)["active"] == false);
  const auto targets = run({"targets", "list", webhookId}, envWithUrl);
  CHECK(firstMatch(targets.out, "ID +NAME +TYPE +STATE +BREAKER +ORDERING +BACKLOG +OLDEST_WAITING "
                                "+BLOCKED_BY +URL\n"));
  CHECK(firstMatch(targets.out,
                   targetId + " +t +http +inactive +closed +parallel +0 +- +- +https://example.com/x\n"));

  SUBCASE("a missing token is an error that says what to set") {
    const auto noToken = run({"webhooks", "list", "--url", daemon.url()}, {});
    CHECK(noToken.exitCode == 1);
    CHECK(contains(noToken.err, "export WEBHOOKER_TOKEN="));
    CHECK(noToken.out.empty());
  }
  SUBCASE("API errors show their code and exit 1") {
    const auto unknown = run({"targets", "list", kNoSuchWebhook}, envWithUrl);
    CHECK(unknown.exitCode == 1);
    CHECK(contains(unknown.err, "(not_found, HTTP 404)"));
    const auto wrongToken =
        run({"webhooks", "list"}, {"WEBHOOKER_TOKEN=whk_wrong", "WEBHOOKER_URL=" + daemon.url()});
    CHECK(wrongToken.exitCode == 1);
    CHECK(contains(wrongToken.err, "unauthorized"));
  }
  SUBCASE("an unreachable daemon is reported with its URL and what went wrong") {
    const auto unreachable = run({"webhooks", "list", "--url", "http://127.0.0.1:1"}, env);
    CHECK(unreachable.exitCode == 1);
    CHECK(contains(unreachable.err, "cannot reach http://127.0.0.1:1: could not connect (is the "
                                    "daemon running, and is this its address?"));
  }
  SUBCASE("--url with no URL for the target is refused as ambiguous, and changes nothing") {
    const auto create = run({"targets", "create", webhookId, "--name", "u", "--type", "http",
                             "--url", "https://example.com/y"},
                            env);
    CHECK(create.exitCode == 2);
    CHECK(contains(create.err, "--url: is the daemon's address (https://example.com/y); give the "
                               "target's URL with --target-url"));
    const auto update =
        run({"targets", "update", webhookId, targetId, "--url", "https://example.com/old"}, env);
    CHECK(update.exitCode == 2);
    CHECK(contains(update.err, "--url: is the daemon's address"));
    const json after = json::parse(run({"targets", "list", webhookId, "--json"}, envWithUrl).out);
    REQUIRE(after["targets"].size() == 1);
    CHECK(after["targets"][0]["config"]["url"] == "https://example.com/x");
  }
  SUBCASE("webhooks and targets by name, wherever an id goes") {
    const auto shownByName = run({"webhooks", "show", "shop", "--json"}, envWithUrl);
    REQUIRE_MESSAGE(shownByName.exitCode == 0, describe(shownByName));
    CHECK(json::parse(shownByName.out)["id"] == webhookId);
    const auto enabled = run({"targets", "enable", "shop", "t"}, envWithUrl);
    REQUIRE_MESSAGE(enabled.exitCode == 0, describe(enabled));
    CHECK(json::parse(enabled.out)["id"] == targetId);
    CHECK(json::parse(enabled.out)["active"] == true);
    const auto targetByName = run({"targets", "show", "shop", "t"}, envWithUrl);
    REQUIRE_MESSAGE(targetByName.exitCode == 0, describe(targetByName));
    CHECK(contains(targetByName.out, "\"id\": \"" + targetId + "\""));
    CHECK(contains(targetByName.out, "state           active\n"));
    REQUIRE(run({"webhooks", "create", "--name", "shop"}, envWithUrl).exitCode == 0);
    const auto ambiguous = run({"webhooks", "show", "shop"}, envWithUrl);
    CHECK(ambiguous.exitCode == 1);
    CHECK(contains(ambiguous.err, "2 webhooks are named \"shop\"; use one of their ids "
                                  "(ambiguous_name, HTTP 409)"));
  }
  SUBCASE("entrypoints by name: create --name, rename, deactivate and delete by name") {
    const auto github = run({"entrypoints", "create", "shop", "--name", "github"}, envWithUrl);
    REQUIRE_MESSAGE(github.exitCode == 0, describe(github));
    const std::string entrypointId = json::parse(github.out)["id"].get<std::string>();
    CHECK(json::parse(github.out)["name"] == "github");
    const auto paused = run({"entrypoints", "deactivate", "shop", "github"}, envWithUrl);
    REQUIRE_MESSAGE(paused.exitCode == 0, describe(paused));
    CHECK(json::parse(paused.out)["id"] == entrypointId);
    CHECK(json::parse(paused.out)["active"] == false);
    const auto renamed =
        run({"entrypoints", "rename", "shop", "github", "--name", "gh"}, envWithUrl);
    REQUIRE_MESSAGE(renamed.exitCode == 0, describe(renamed));
    const auto listed = run({"entrypoints", "list", "shop"}, envWithUrl);
    CHECK(firstMatch(listed.out, "ID +NAME +URL +ACTIVE +CREATED_AT\n"));
    CHECK_MESSAGE(firstMatch(listed.out, entrypointId + " +gh +/hooks/" + entrypointId + " +no "),
                  listed.out);
    CHECK(firstMatch(listed.out, " +default +/hooks/"));
    const auto taken = run({"entrypoints", "rename", "shop", "gh", "--name", "default"}, envWithUrl);
    CHECK(taken.exitCode == 1);
    CHECK(contains(taken.err, "name: another entrypoint of this webhook is called \"default\" "
                              "(conflict, HTTP 409)"));
    const auto deleted = run({"entrypoints", "delete", "shop", "gh"}, envWithUrl);
    CHECK_MESSAGE(deleted.exitCode == 0, describe(deleted));
    CHECK(json::parse(run({"entrypoints", "list", "shop", "--json"}, envWithUrl).out)
              ["entrypoints"].size() == 1);
  }
  SUBCASE("a target's type cannot be changed, so update does not offer --type") {
    const auto typed = run({"targets", "update", webhookId, targetId, "--type", "log"}, envWithUrl);
    CHECK(typed.exitCode != 0);
    CHECK(contains(typed.err, "--type"));
    CHECK(json::parse(run({"targets", "show", webhookId, targetId, "--json"}, envWithUrl).out)
              ["type"] == "http");
  }
  SUBCASE("--target takes a target's name as well as its id") {
    auto ingest = apiClient(daemon, "");
    const auto hook = json::parse(run({"webhooks", "show", webhookId, "--json"}, envWithUrl).out)
                          ["entrypoints"][0]["url"].get<std::string>();
    REQUIRE(run({"targets", "activate", webhookId, targetId}, envWithUrl).exitCode == 0);
    auto posted = ingest.Post(hook, "{}", "application/json");
    REQUIRE(posted);
    REQUIRE(posted->status == 200);
    for (const std::string& ref : {std::string("t"), targetId}) {
      CAPTURE(ref);
      const auto byRef = run({"deliveries", "list", webhookId, "--target", ref, "--json"},
                             envWithUrl);
      REQUIRE_MESSAGE(byRef.exitCode == 0, describe(byRef));
      const json deliveries = json::parse(byRef.out)["deliveries"];
      REQUIRE(deliveries.size() == 1);
      CHECK(deliveries[0]["target_id"] == targetId);
    }
    const auto unknown = run({"events", "list", webhookId, "--target", "nobody"}, envWithUrl);
    CHECK(unknown.exitCode == 1);
    CHECK(contains(unknown.err, "--target nobody: no target of this webhook has that name or id"));
  }
  SUBCASE("webhooks delete removes the webhook and its events database") {
    const auto hook =
        json::parse(
            run({"webhooks", "show", webhookId, "--json"}, envWithUrl).out)["entrypoints"][0]["url"]
            .get<std::string>();
    auto posted = apiClient(daemon, "").Post(hook, "{}", "application/json");  // makes the file
    REQUIRE(posted);
    REQUIRE(posted->status == 200);
    REQUIRE(std::filesystem::exists(eventsDbPath(dir, webhookId)));
    const auto deleted = run({"webhooks", "delete", webhookId}, envWithUrl);
    CHECK_MESSAGE(deleted.exitCode == 0, describe(deleted));
    CHECK(deleted.out == "deleted " + webhookId + "\n");
    CHECK_FALSE(std::filesystem::exists(eventsDbPath(dir, webhookId)));
    const auto after = run({"webhooks", "list"}, envWithUrl);
    CHECK(after.exitCode == 0);
    CHECK_FALSE(contains(after.out, webhookId));
  }

  for (const CommandResult& r : runs) {
    CHECK_FALSE(contains(r.out, token));  // the CLI never shows the token
    CHECK_FALSE(contains(r.err, token));
  }
}

// What docs/receiver-outages.md needs from a shell: a FIFO target whose
// receiver fails, with its breaker open, its backlog and the delivery that
// holds the line.
TEST_CASE("targets list/show and status print state, breaker, backlog and the FIFO blocker") {
  Receiver receiver;
  receiver.setDefault(respond(500));
  TempDir dir;
  DaemonOptions options;
  // The sampler counts often: `status` shows its latest pass.
  options.args = {"--allow-networks", "127.0.0.1/32", "--breaker-threshold", "1",
                  "--breaker-cooldown-ms", "600000", "--sampler-interval-ms", "100"};
  DaemonProcess daemon(dir.path(), options);
  REQUIRE(daemon.adminToken());
  const std::vector<std::string> env = {"WEBHOOKER_TOKEN=" + *daemon.adminToken(),
                                        "WEBHOOKER_URL=" + daemon.url()};
  auto api = apiClient(daemon, *daemon.adminToken());
  const json shop = createWebhook(api, "shop");
  const auto created = runWebhooker(
      {"targets", "create", "shop", "--name", "orders", "--type", "http", "--target-url",
       receiver.url("/in"), "--ordering", "fifo", "--max-retries", "10", "--base-delay-ms",
       "600000", "--max-delay-ms", "600000"},
      env);
  REQUIRE_MESSAGE(created.exitCode == 0, describe(created));
  auto ingest = apiClient(daemon, "");
  const std::string hook = shop["entrypoints"][0]["url"];
  for (int i = 0; i < 2; ++i) REQUIRE(ingest.Post(hook, "{}", "application/json")->status == 200);

  // The first delivery failed once, opened the breaker and waits for its
  // retry; the second waits behind it.
  std::string blocker;
  REQUIRE(eventually(
      [&] {
        const json stats =
            parseBody(api.Get("/api/v1/webhooks/" + shop["id"].get<std::string>() + "/stats"));
        const json t = stats["targets"][0];
        if (t["breaker"]["state"] != "open" || t["oldest_waiting"].is_null() ||
            t["oldest_waiting"]["status"] != "retrying" || t["deliveries"]["pending"] != 1)
          return false;
        blocker = t["oldest_waiting"]["delivery_id"];
        return true;
      },
      10s));

  const auto list = runWebhooker({"targets", "list", "shop"}, env);
  REQUIRE_MESSAGE(list.exitCode == 0, describe(list));
  CHECK_MESSAGE(firstMatch(list.out, " orders +http +active +open +fifo +2 +[0-9]+[smhd].* +" +
                                         blocker + " +http://127\\.0\\.0\\.1:"),
                list.out);

  const auto show = runWebhooker({"targets", "show", "shop", "orders"}, env);
  REQUIRE_MESSAGE(show.exitCode == 0, describe(show));
  CHECK(contains(show.out, "state           active\n"));
  CHECK(contains(show.out, "breaker         open, 1 consecutive failure, next try in "));
  CHECK(contains(show.out, "backlog         2 (1 pending, 1 retrying)\n"));
  CHECK(contains(show.out, "oldest waiting  delivery " + blocker + " (retrying, 1 attempt), due for "));
  CHECK(contains(show.out, "fifo blocked by delivery " + blocker + "\n"));

  // The backlog as the sampler counts it, at its next pass.
  REQUIRE(eventually(
      [&] {
        const json counted = json::parse(runWebhooker({"status", "--json"}, env).out, nullptr, false);
        return counted.is_object() && counted["backlog"] == 2 && counted["oldest_pending"].is_object();
      },
      10s));
  const auto status = runWebhooker({"status"}, env);
  REQUIRE_MESSAGE(status.exitCode == 0, describe(status));
  CHECK(firstMatch(status.out, "counted         [0-9]+s ago \\(20[0-9-]{8}T[0-9:.]+Z\\)\n"));
  CHECK(contains(status.out, "webhooks        1\n"));
  CHECK(contains(status.out, "targets         1 (0 disabled)\n"));
  CHECK(contains(status.out, "backlog         2 (1 pending, 1 retrying)\n"));
  CHECK(contains(status.out, "breakers open   1\n"));
  CHECK(firstMatch(status.out, "oldest pending  [0-9]+[smhd][0-9]*[smh]? \\(webhook shop, target orders\\)\n"));
  const json summary = json::parse(runWebhooker({"status", "--json"}, env).out);
  CHECK(summary["backlog"] == 2);
  CHECK(summary["breakers_open"] == 1);
  CHECK(summary["oldest_pending"]["target_name"] == "orders");
  const auto unreachable = runWebhooker({"status", "--url", "http://127.0.0.1:1"}, env);
  CHECK(unreachable.exitCode == 1);
  CHECK(contains(unreachable.err, "cannot reach http://127.0.0.1:1"));
}

// `status` is one request: a quiet webhook's events file is not opened
// (no -wal, no -shm beside it), by the sampler's passes either.
TEST_CASE("status opens no quiet webhook's events file") {
  TempDir dir;
  DaemonOptions options;
  options.args = {"--sampler-interval-ms", "100"};
  DaemonProcess daemon(dir.path(), options);
  REQUIRE(daemon.adminToken());
  const std::vector<std::string> env = {"WEBHOOKER_TOKEN=" + *daemon.adminToken(),
                                        "WEBHOOKER_URL=" + daemon.url()};
  auto api = apiClient(daemon, *daemon.adminToken());
  for (const char* name : {"quiet-a", "quiet-b", "quiet-c"}) createWebhook(api, name);
  const auto walOrShm = [&] {
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("events-") && (name.ends_with("-wal") || name.ends_with("-shm")))
        found.push_back(name);
    }
    return found;
  };
  REQUIRE(walOrShm().empty());

  const auto first = runWebhooker({"status", "--json"}, env);
  REQUIRE_MESSAGE(first.exitCode == 0, describe(first));
  CHECK_MESSAGE(walOrShm().empty(), first.out);
  const json counted = json::parse(first.out);
  CHECK(counted["webhooks"] == 3);
  CHECK(counted["backlog"] == 0);
  // Once a pass has counted the three webhooks' files too.
  REQUIRE(eventually(
      [&] {
        const json next = json::parse(runWebhooker({"status", "--json"}, env).out, nullptr, false);
        return next.is_object() && next["sampled_at"] != counted["sampled_at"];
      },
      10s));
  const auto status = runWebhooker({"status"}, env);
  REQUIRE_MESSAGE(status.exitCode == 0, describe(status));
  CHECK(contains(status.out, "webhooks        3\n"));
  CHECK(contains(status.out, "backlog         0 (0 pending, 0 retrying)\n"));
  CHECK_MESSAGE(walOrShm().empty(), status.out);
}

// A daemon older than GET /api/v1/summary answers it 404: `status` says
// so, and prints no figure.
TEST_CASE("status against a daemon without the summary route says so") {
  Receiver oldDaemon;
  ScriptedResponse noRoute = respond(404);
  noRoute.body = R"({"error":{"code":"not_found","message":"no such route"}})";
  noRoute.contentType = "application/json";
  oldDaemon.setDefault(noRoute);
  const auto status = runWebhooker({"status", "--url", oldDaemon.url("")},
                                   {"WEBHOOKER_TOKEN=whk_any-token-0123456789abcdef"});
  CHECK(status.exitCode == 1);
  CHECK(status.out.empty());
  CHECK_MESSAGE(contains(status.err, "does not answer GET /api/v1/summary (no such route"),
                status.err);
  CHECK(contains(status.err, "older than this CLI"));
  const auto requests = oldDaemon.requests();
  REQUIRE(requests.size() == 1);  // one request, no fallback to summing
  CHECK(requests[0].path == "/api/v1/summary");
}

TEST_CASE("the CLI's help and errors name the program and what each argument is") {
  SUBCASE("usage lines name the program and the command") {
    const auto serveHelp = runWebhooker({"serve", "--help"}, {});
    CHECK(serveHelp.exitCode == 0);
    CHECK(contains(serveHelp.out, "Usage: webhooker serve [OPTIONS]"));
    CHECK(contains(serveHelp.out, "WEBHOOKER_TOKEN"));  // the CLI's token, next to the daemon's
    const auto topHelp = runWebhooker({"--help"}, {});
    CHECK(topHelp.exitCode == 0);
    CHECK(contains(topHelp.out, "Usage: webhooker [OPTIONS] [SUBCOMMAND]"));
  }
  SUBCASE("the daemon's flags work without the word serve") {
    const auto bad = runWebhooker({"--port", "70000"}, {});
    CHECK(bad.exitCode != 0);
    CHECK(contains(bad.err, "--port"));
    CHECK(contains(bad.err, "70000"));
    CHECK_FALSE(contains(bad.err, "not expected"));
  }
  SUBCASE("--sync-mode only where it means something") {
    CHECK(contains(runWebhooker({"serve", "--help"}, {}).out, "--sync-mode"));
    for (const char* command : {"migrate", "backup", "admin-token"}) {
      CAPTURE(command);
      CHECK_FALSE(contains(runWebhooker({command, "--help"}, {}).out, "--sync-mode"));
    }
  }
  SUBCASE("an undoing --no-* flag only on update, where there is something to undo") {
    const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> commands = {
        {{"targets", "create"},
         {"--no-filter", "--no-transform", "--no-rate-limit", "--no-auto-resume"}},
        {{"webhooks", "create"}, {"--no-masks"}},
        {{"entrypoints", "create"}, {"--default-event-type"}}};
    for (const auto& [create, flags] : commands) {
      std::vector<std::string> update = create;
      update.back() = create[0] == "entrypoints" ? "event-type" : "update";
      const std::string createHelp = runWebhooker({create[0], create[1], "--help"}, {}).out;
      const std::string updateHelp = runWebhooker({update[0], update[1], "--help"}, {}).out;
      for (const std::string& flag : flags) {
        const auto& command = create[0];  // clang 14: a lambda cannot name a binding
        CAPTURE(command);
        CAPTURE(flag);
        CHECK_FALSE(contains(createHelp, flag));
        CHECK(contains(updateHelp, flag));
      }
    }
  }
  SUBCASE("positional ids say whose id they are, and --limit is a number") {
    const auto show = runWebhooker({"targets", "show", "--help"}, {});
    CHECK(contains(show.out, "the webhook's id"));
    CHECK(contains(show.out, "the target's id"));
    const auto list = runWebhooker({"events", "list", "--help"}, {});
    CHECK(contains(list.out, "--limit INT"));
    const auto notNumber = runWebhooker({"events", "list", kNoSuchWebhook, "--limit", "ten"},
                                        {"WEBHOOKER_TOKEN=whk_unused"});
    CHECK(notNumber.exitCode != 0);
    CHECK(contains(notNumber.err, "--limit"));
  }
}

TEST_CASE("the CLI reads secrets from standard input, never from its command line") {
  TempDir dir;
  DaemonProcess daemon(dir.path());
  REQUIRE(daemon.adminToken());
  const std::vector<std::string> env = {"WEBHOOKER_TOKEN=" + *daemon.adminToken(),
                                        "WEBHOOKER_URL=" + daemon.url()};
  auto api = apiClient(daemon, *daemon.adminToken());
  const std::string webhookId = createWebhook(api, "shop")["id"];
  const std::string signingSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const std::string senderSecret = "github-sender-secret";

  const auto target = runWebhooker({"targets", "create", webhookId, "--name", "t", "--type", "http",
                                    "--target-url", "https://example.com/x", "--signing-secret",
                                    "-"},
                                   env, signingSecret + "\n");
  REQUIRE_MESSAGE(target.exitCode == 0, describe(target));
  const auto entrypoint = runWebhooker({"entrypoints", "create", webhookId, "--verify", "github",
                                        "--verify-secret", "-", "--inactive"},
                                       env, senderSecret + "\n");
  REQUIRE_MESSAGE(entrypoint.exitCode == 0, describe(entrypoint));
  const json created = json::parse(entrypoint.out);
  CHECK(created["verification"] == "github");
  CHECK(created["active"] == false);
  for (const CommandResult* r : {&target, &entrypoint}) {
    CHECK_FALSE(contains(r->out, signingSecret));
    CHECK_FALSE(contains(r->out, senderSecret));
  }

  // The secrets arrived whole (no newline), where only the daemon reads them.
  SQLite::Database mainDb((dir / "webhooker.db").string(), SQLite::OPEN_READONLY);
  SQLite::Statement config(mainDb, "SELECT json_extract(config, '$.signing_secret') FROM targets");
  REQUIRE(config.executeStep());
  CHECK(config.getColumn(0).getString() == signingSecret);
  SQLite::Statement sender(mainDb, "SELECT verification_secret FROM entrypoints WHERE id = ?");
  sender.bind(1, created["id"].get<std::string>());
  REQUIRE(sender.executeStep());
  CHECK(sender.getColumn(0).getString() == senderSecret);

  SUBCASE("entrypoints verify changes the scheme of an existing entrypoint") {
    const auto verify = runWebhooker({"entrypoints", "verify", webhookId, created["id"], "--verify",
                                      "none"},
                                     env);
    CHECK_MESSAGE(verify.exitCode == 0, describe(verify));
    CHECK(json::parse(verify.out)["verification"] == "none");
  }
  SUBCASE("nothing on standard input is an error, and nothing is created") {
    const auto empty = runWebhooker({"targets", "create", webhookId, "--name", "u", "--type",
                                     "http", "--target-url", "https://example.com/y",
                                     "--signing-secret", "-"},
                                    env);
    CHECK(empty.exitCode != 0);
    CHECK(contains(empty.err, "nothing to read on standard input"));
    SQLite::Statement count(mainDb, "SELECT count(*) FROM targets");
    REQUIRE(count.executeStep());
    CHECK(count.getColumn(0).getInt() == 1);
  }
}

// The data folder and backups hold every tenant's events and every target
// credential: nobody but their owner may read them, whatever umask webhooker
// was started with.
TEST_CASE("serve, backup and migrate create files 0600 and folders 0700") {
  struct UsualUmask {  // inherited by the children; restored for the next test
    mode_t previous = ::umask(022);
    ~UsualUmask() { ::umask(previous); }
  } usualUmask;
  TempDir dir;
  const auto checkPrivate = [](const std::filesystem::path& folder) {
    CHECK(modeOf(folder) == 0700);
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
      CAPTURE(entry.path().string());
      CHECK(modeOf(entry.path()) == (entry.is_directory() ? 0700u : 0600u));
      names.insert(entry.path().filename().string());
    }
    return names;
  };

  const auto data = dir / "data";  // serve creates it
  DaemonProcess daemon(data, {.args = {}, .env = {DaemonApi::adminTokenEnv()}});
  DaemonApi api(daemon.url());
  const auto webhook = api.createWebhook("modes");
  const auto ingested = api.sender().Post(DaemonApi::hookPath(webhook), "{}", "application/json");
  REQUIRE(ingested);
  REQUIRE(ingested->status == 200);
  const auto created = checkPrivate(data);
  const std::string eventsDb = "events-" + webhook["id"].get<std::string>() + ".db";
  for (const std::string& name : {std::string("webhooker.db"), std::string("webhooker.db-wal"),
                                  std::string("webhooker.db-shm"), eventsDb, eventsDb + "-wal"})
    CHECK_MESSAGE(created.count(name) == 1, name);

  SUBCASE("backup into a new folder") {
    const auto target = dir / "backups" / "first";
    const auto backup = runWebhooker({"backup", "--data-dir", data.string(), target.string()});
    REQUIRE_MESSAGE(backup.exitCode == 0, describe(backup));
    CHECK(modeOf(dir / "backups") == 0700);
    CHECK(checkPrivate(target).count("webhooker.db") == 1);
  }
  SUBCASE("backup into an existing empty folder others could read tightens it") {
    const auto target = dir / "shared";
    std::filesystem::create_directory(target);
    std::filesystem::permissions(target, std::filesystem::perms::owner_all |
                                             std::filesystem::perms::group_read |
                                             std::filesystem::perms::group_exec |
                                             std::filesystem::perms::others_read |
                                             std::filesystem::perms::others_exec);
    const auto backup = runWebhooker({"backup", "--data-dir", data.string(), target.string()});
    REQUIRE_MESSAGE(backup.exitCode == 0, describe(backup));
    CHECK(checkPrivate(target).count(eventsDb) == 1);
  }
  SUBCASE("migrate creates a missing data folder") {
    const auto fresh = dir / "fresh" / "data";
    const auto migrate = runWebhooker({"migrate", "--data-dir", fresh.string()});
    REQUIRE_MESSAGE(migrate.exitCode == 0, describe(migrate));
    CHECK(modeOf(dir / "fresh") == 0700);
    CHECK(checkPrivate(fresh).count("webhooker.db") == 1);
  }
}

TEST_CASE("a second daemon on the same data folder refuses to start and names the first") {
  TempDir dir;
  DaemonProcess first(dir.path(), {.args = {}, .env = {DaemonApi::adminTokenEnv()}});
  const auto second = runCommand(
      {webhookerBin(), "serve", "--port", "0", "--data-dir", dir.path().string()}, {},
      std::chrono::seconds(10));
  CHECK_MESSAGE(second.exitCode == 1, describe(second));
  CHECK(contains(second.err, "daemon.data_dir_lock_failed reason=data_dir_locked"));
  CHECK(contains(second.err, "another webhooker (pid " + std::to_string(first.pid()) + ")"));
  CHECK_FALSE(contains(second.out, "listening"));
  CHECK(listStatus(first, DaemonApi::kAdminToken) == 200);

  // Commands that work beside a daemon still do.
  TempDir copies;
  const auto backup =
      runWebhooker({"backup", "--data-dir", dir.path().string(), (copies / "b").string()});
  CHECK_MESSAGE(backup.exitCode == 0, describe(backup));

  // However the first one ends, the kernel drops its lock with it.
  first.kill9();
  DaemonProcess next(dir.path(), {.args = {}, .env = {DaemonApi::adminTokenEnv()}});
  CHECK(listStatus(next, DaemonApi::kAdminToken) == 200);
}

TEST_CASE("the data folder stays locked when its lock file is renamed or removed") {
  TempDir dir;
  DaemonProcess first(dir.path(), {.args = {}, .env = {DaemonApi::adminTokenEnv()}});
  std::filesystem::rename(dir / "webhooker.lock", dir / "webhooker.lock.moved");
  const auto second = runCommand(
      {webhookerBin(), "serve", "--port", "0", "--data-dir", dir.path().string()}, {},
      std::chrono::seconds(10));
  CHECK_MESSAGE(second.exitCode == 1, describe(second));
  CHECK(contains(second.err, "daemon.data_dir_lock_failed reason=data_dir_locked"));
  CHECK_FALSE(contains(second.out, "listening"));

  std::filesystem::remove(dir / "webhooker.lock.moved");
  std::filesystem::remove(dir / "webhooker.lock");
  const auto third = runCommand(
      {webhookerBin(), "serve", "--port", "0", "--data-dir", dir.path().string()}, {},
      std::chrono::seconds(10));
  CHECK_MESSAGE(third.exitCode == 1, describe(third));
  CHECK(contains(third.err, "daemon.data_dir_lock_failed reason=data_dir_locked"));
  CHECK(listStatus(first, DaemonApi::kAdminToken) == 200);
}

TEST_CASE("a daemon whose port is taken says why and exits non-zero") {
  TempDir firstDir, secondDir;
  DaemonProcess first(firstDir.path());
  const auto second = runCommand({webhookerBin(), "serve", "--port", std::to_string(first.port()),
                                  "--data-dir", secondDir.path().string()},
                                 {}, std::chrono::seconds(10));
  CHECK_MESSAGE(second.exitCode == 1, describe(second));
  CHECK(contains(second.err, "daemon.listen_failed reason=address_in_use"));
  CHECK(contains(second.err, "address in use"));
  CHECK_FALSE(contains(second.out, "listening"));
}

}  // namespace webhooker::testing
