#include "tests/support/test_server.h"

#include "tests/support/daemon_api.h"

namespace webhooker::testing {

namespace {

nlohmann::json expectStatus(const httplib::Result& res, int status, const char* what) {
  if (!res) throw std::runtime_error(std::string(what) + ": no response");
  if (res->status != status)
    throw std::runtime_error(std::string(what) + ": status " + std::to_string(res->status) +
                             ": " + res->body);
  return nlohmann::json::parse(res->body);
}

}  // namespace

TestServer::TestServer(TestServerOptions options)
    : options_(options), clock_(options.clock ? *options.clock : systemClock_) {
  auto store = MainStore::open(dir_ / "webhooker.db", DbOptions{}, clock_);
  if (!store) throw std::runtime_error("TestServer: open main DB: " + store.error().message);
  store_ = std::move(store.value());
  if (auto t = server::ensureAdminToken(*store_, std::string(kToken)); !t)
    throw std::runtime_error("TestServer: admin token: " + t.error().message);
  DbOptions eventsDbOptions;
  eventsDbOptions.busyTimeoutMs = options_.busyTimeoutMs;
  eventsDbs_ = std::make_unique<EventsDbPool>(dir_.path(), eventsDbOptions, clock_);

  server::ServerOptions serverOptions;
  serverOptions.listenAddress = "127.0.0.1";
  serverOptions.port = 0;
  serverOptions.threads = options_.threads;
  serverOptions.ingest.bodyLimit = options_.bodyLimit;
  if (options_.tune) options_.tune(serverOptions);
  sampler_ = std::make_unique<BacklogSampler>(*store_, *eventsDbs_, deliveryMetrics_, clock_);
  server::ServerParts parts{*store_, *eventsDbs_, dispatcher_, guard_, breakers_, registry_};
  parts.sampler = sampler_.get();
  http_ = std::make_unique<server::HttpServer>(serverOptions, parts);
  auto port = http_->bind();
  if (!port) throw std::runtime_error("TestServer: bind: " + port.error().message);
  port_ = port.value();
  serveThread_ = std::jthread([this] { http_->run(); });
  waitUntilServing();
}

TestServer::~TestServer() {
  http_->stop();
  if (serveThread_.joinable()) serveThread_.join();
}


httplib::Client TestServer::client() const {
  httplib::Client c = anonymousClient();
  c.set_bearer_token_auth(kToken);
  return c;
}

httplib::Client TestServer::anonymousClient() const {
  httplib::Client c("127.0.0.1", port_);
  c.set_tcp_nodelay(true);
  c.set_connection_timeout(std::chrono::seconds(5));
  c.set_read_timeout(std::chrono::seconds(30));
  recordApiAnswers(c);
  return c;
}

std::filesystem::path TestServer::mainDbPath() const { return dir_ / "webhooker.db"; }

std::filesystem::path TestServer::eventsDbPath(const std::string& webhookId) const {
  return eventsDbs_->pathFor(webhookId);
}

nlohmann::json TestServer::createWebhook(const std::string& name) {
  return expectStatus(client().Post("/api/v1/webhooks", nlohmann::json{{"name", name}}.dump(),
                                    "application/json"),
                      201, "create webhook");
}

nlohmann::json TestServer::createTarget(const std::string& webhookId, const nlohmann::json& body) {
  return expectStatus(client().Post("/api/v1/webhooks/" + webhookId + "/targets", body.dump(),
                                    "application/json"),
                      201, "create target");
}

void TestServer::waitUntilServing() {
  auto c = anonymousClient();
  for (int i = 0; i < 500; ++i) {
    if (auto res = c.Get("/healthz"); res && res->status == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The jthread joins as the members unwind: ask the server to stop first.
  http_->stop();
  throw std::runtime_error("TestServer: /healthz never answered");
}

httplib::Result postJson(httplib::Client& c, const std::string& path, const nlohmann::json& body) {
  return c.Post(path, body.dump(), "application/json");
}

httplib::Result patchJson(httplib::Client& c, const std::string& path, const nlohmann::json& body) {
  return c.Patch(path, body.dump(), "application/json");
}

httplib::Result request(httplib::Client& c, const std::string& method, const std::string& path,
                        const std::string& body, const httplib::Headers& headers) {
  if (method == "GET") return c.Get(path, headers);
  if (method == "POST") return c.Post(path, headers, body, "application/json");
  if (method == "PUT") return c.Put(path, headers, body, "application/json");
  if (method == "PATCH") return c.Patch(path, headers, body, "application/json");
  if (method == "DELETE") return c.Delete(path, headers);
  throw std::invalid_argument("request: unsupported method " + method);
}

nlohmann::json jsonOf(const httplib::Result& res) {
  if (!res) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(res->body, nullptr, false);
}

std::string errorCode(const httplib::Result& res) {
  if (!res) return "<no response: " + httplib::to_string(res.error()) + ">";
  const nlohmann::json body = jsonOf(res);
  const bool shaped = body.is_object() && body.size() == 1 && body.contains("error") &&
                      body["error"].is_object() && body["error"].size() == 2 &&
                      body["error"].contains("code") && body["error"]["code"].is_string() &&
                      body["error"].contains("message") &&
                      body["error"]["message"].is_string() &&
                      !body["error"]["code"].get<std::string>().empty() &&
                      !body["error"]["message"].get<std::string>().empty();
  if (!shaped) return "<not an error body: " + res->body + ">";
  return body["error"]["code"].get<std::string>();
}

int64_t countRows(const std::filesystem::path& file, const std::string& table,
                  const std::string& where) {
  // A webhook's events file is made by its first event: none, no rows.
  if (!std::filesystem::exists(file)) return 0;
  SQLite::Database db = openReadOnly(file);
  return db.execAndGet("SELECT COUNT(*) FROM " + table + (where.empty() ? "" : " WHERE " + where))
      .getInt64();
}

std::vector<std::string> tableNames(const std::filesystem::path& file) {
  SQLite::Database db = openReadOnly(file);
  SQLite::Statement q(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  std::vector<std::string> out;
  while (q.executeStep()) out.push_back(q.getColumn(0).getString());
  return out;
}

std::string dumpDatabase(const std::filesystem::path& file) {
  if (!std::filesystem::exists(file)) return "(no file)";
  SQLite::Database db = openReadOnly(file);
  std::string out;
  SQLite::Statement tables(db,
                           "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  while (tables.executeStep()) {
    const std::string table = tables.getColumn(0).getString();
    out += "== " + table + "\n";
    SQLite::Statement rows(db, "SELECT * FROM \"" + table + "\" ORDER BY rowid");
    while (rows.executeStep()) {
      for (int i = 0; i < rows.getColumnCount(); ++i) {
        const SQLite::Column col = rows.getColumn(i);
        out += col.isNull() ? std::string("NULL") : col.getString();
        out += '\x1f';
      }
      out += '\n';
    }
  }
  return out;
}

std::set<std::string> eventsDbFiles(const std::filesystem::path& dir) {
  std::set<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("events-", 0) == 0 && name.size() > 3 &&
        name.compare(name.size() - 3, 3, ".db") == 0)
      out.insert(name);
  }
  return out;
}

}  // namespace webhooker::testing
