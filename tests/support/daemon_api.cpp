#include "tests/support/daemon_api.h"

#include <cstdlib>
#include <fstream>
#include <mutex>

namespace webhooker::testing {

namespace {

nlohmann::json expect201(const Result<app::AdminAnswer>& answer, const char* what) {
  if (!answer) throw std::runtime_error(std::string(what) + ": " + answer.error().message);
  if (answer.value().status != 201)
    throw std::runtime_error(std::string(what) + ": " + answer.value().errorText() + ": " +
                             answer.value().body);
  return nlohmann::json::parse(answer.value().body);
}

}  // namespace

void recordApiAnswers(httplib::Client& c) {
  static const char* const file = std::getenv("WEBHOOKER_API_ANSWERS");
  if (!file || !*file) return;
  c.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    static std::mutex mutex;
    const nlohmann::json line = {{"method", req.method},
                                 {"path", req.path},
                                 {"status", res.status},
                                 {"content_type", res.get_header_value("Content-Type")},
                                 {"body", res.body}};
    const std::lock_guard lock(mutex);
    std::ofstream(file, std::ios::app)
        << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  });
}

httplib::Client DaemonApi::sender() const {
  httplib::Client c(baseUrl_);
  c.set_tcp_nodelay(true);
  c.set_connection_timeout(std::chrono::seconds(5));
  c.set_read_timeout(std::chrono::seconds(15));
  recordApiAnswers(c);
  return c;
}

httplib::Client DaemonApi::admin() const {
  httplib::Client c = sender();
  c.set_bearer_token_auth(kAdminToken);
  return c;
}

app::AdminClient DaemonApi::adminClient() const {
  auto client = app::AdminClient::forUrl(baseUrl_, kAdminToken, std::chrono::seconds(15));
  if (!client) throw std::runtime_error(client.error().message);
  return std::move(client.value());
}

nlohmann::json DaemonApi::createWebhook(const std::string& name) const {
  return expect201(adminClient().sendJson("POST", "/api/v1/webhooks", nlohmann::json{{"name", name}}),
                   "create webhook");
}

nlohmann::json DaemonApi::createTarget(const std::string& webhookId,
                                       const nlohmann::json& target) const {
  return expect201(
      adminClient().sendJson("POST", "/api/v1/webhooks/" + webhookId + "/targets", target),
      "create target");
}

std::string DaemonApi::hookPath(const nlohmann::json& webhook) {
  return webhook.at("entrypoints").at(0).at("url").get<std::string>();
}

}  // namespace webhooker::testing
