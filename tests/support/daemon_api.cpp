#include "tests/support/daemon_api.h"

namespace webhooker::testing {

namespace {

nlohmann::json expect201(const httplib::Result& res, const char* what) {
  if (!res) throw std::runtime_error(std::string(what) + ": " + httplib::to_string(res.error()));
  if (res->status != 201)
    throw std::runtime_error(std::string(what) + ": status " + std::to_string(res->status) +
                             ": " + res->body);
  return nlohmann::json::parse(res->body);
}

}  // namespace

httplib::Client DaemonApi::sender() const {
  httplib::Client c(baseUrl_);
  c.set_tcp_nodelay(true);
  c.set_connection_timeout(std::chrono::seconds(5));
  c.set_read_timeout(std::chrono::seconds(15));
  return c;
}

httplib::Client DaemonApi::admin() const {
  httplib::Client c = sender();
  c.set_bearer_token_auth(kAdminToken);
  return c;
}

nlohmann::json DaemonApi::createWebhook(const std::string& name) const {
  return expect201(admin().Post("/api/v1/webhooks", nlohmann::json{{"name", name}}.dump(),
                                "application/json"),
                   "create webhook");
}

nlohmann::json DaemonApi::createTarget(const std::string& webhookId,
                                       const nlohmann::json& target) const {
  return expect201(admin().Post("/api/v1/webhooks/" + webhookId + "/targets", target.dump(),
                                "application/json"),
                   "create target");
}

std::string DaemonApi::hookPath(const nlohmann::json& webhook) {
  return webhook.at("entrypoints").at(0).at("url").get<std::string>();
}

}  // namespace webhooker::testing
