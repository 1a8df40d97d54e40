// DaemonApi: the admin API and the ingest endpoint of a running webhooker
// (DaemonProcess) as tests drive them — a fixed admin token (pass
// adminTokenEnv() to the daemon), creating webhooks and targets, posting
// events. Setup calls throw std::runtime_error on any unexpected answer.
//
// Threading: each call makes its own httplib::Client, so any thread may call.
#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

namespace webhooker::testing {

class DaemonApi {
 public:
  static constexpr const char* kAdminToken = "whk_daemon-test-admin-token-0123456789";
  // "NAME=value" for DaemonOptions::env.
  static std::string adminTokenEnv() { return std::string("WEBHOOKER_ADMIN_TOKEN=") + kAdminToken; }

  explicit DaemonApi(std::string baseUrl) : baseUrl_(std::move(baseUrl)) {}

  // A client without the admin token: what a webhook sender looks like.
  httplib::Client sender() const {
    httplib::Client c(baseUrl_);
    c.set_tcp_nodelay(true);
    c.set_connection_timeout(std::chrono::seconds(5));
    c.set_read_timeout(std::chrono::seconds(15));
    return c;
  }
  httplib::Client admin() const {
    httplib::Client c = sender();
    c.set_bearer_token_auth(kAdminToken);
    return c;
  }

  // POST /api/v1/webhooks; the 201 body.
  nlohmann::json createWebhook(const std::string& name) const {
    return expect201(admin().Post("/api/v1/webhooks", nlohmann::json{{"name", name}}.dump(),
                                  "application/json"),
                     "create webhook");
  }
  // POST /api/v1/webhooks/{id}/targets; the 201 body.
  nlohmann::json createTarget(const std::string& webhookId, const nlohmann::json& target) const {
    return expect201(admin().Post("/api/v1/webhooks/" + webhookId + "/targets", target.dump(),
                                  "application/json"),
                     "create target");
  }

  // The entrypoint path (/hooks/<uuid>) of a webhook createWebhook() returned.
  static std::string hookPath(const nlohmann::json& webhook) {
    return webhook.at("entrypoints").at(0).at("url").get<std::string>();
  }

 private:
  static nlohmann::json expect201(const httplib::Result& res, const char* what) {
    if (!res) throw std::runtime_error(std::string(what) + ": " + httplib::to_string(res.error()));
    if (res->status != 201)
      throw std::runtime_error(std::string(what) + ": status " + std::to_string(res->status) +
                               ": " + res->body);
    return nlohmann::json::parse(res->body);
  }

  std::string baseUrl_;
};

}  // namespace webhooker::testing
