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

#include "app/admin_client.h"

namespace webhooker::testing {

// With WEBHOOKER_API_ANSWERS set (tests/browser/openapi.test.mjs sets it),
// every answer the client receives is appended to that file as one JSON
// line, which the OpenAPI check validates against docs/openapi.json. The
// clients of TestServer and DaemonApi record.
void recordApiAnswers(httplib::Client& c);

class DaemonApi {
 public:
  static constexpr const char* kAdminToken = "whk_daemon-test-admin-token-0123456789";
  // "NAME=value" for DaemonOptions::env.
  static std::string adminTokenEnv() { return std::string("WEBHOOKER_ADMIN_TOKEN=") + kAdminToken; }

  explicit DaemonApi(std::string baseUrl) : baseUrl_(std::move(baseUrl)) {}

  // A client without the admin token: what a webhook sender looks like.
  httplib::Client sender() const;
  httplib::Client admin() const;

  // POST /api/v1/webhooks; the 201 body.
  nlohmann::json createWebhook(const std::string& name) const;
  // POST /api/v1/webhooks/{id}/targets; the 201 body.
  nlohmann::json createTarget(const std::string& webhookId, const nlohmann::json& target) const;

  // The entrypoint path (/hooks/<uuid>) of a webhook createWebhook() returned.
  static std::string hookPath(const nlohmann::json& webhook);

 private:
  app::AdminClient adminClient() const;

  std::string baseUrl_;
};

}  // namespace webhooker::testing
