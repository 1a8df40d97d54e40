#include "bench/daemon.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "app/admin_client.h"

namespace webhooker::bench {

namespace {

testing::DaemonOptions daemonOptions(const DaemonSettings& s) {
  testing::DaemonOptions o;
  o.args = {"--sync-mode",      s.syncMode,
            "--flush-scope",    s.flushScope,
            "--http-threads",   std::to_string(s.httpThreads),
            "--workers",        std::to_string(s.workers),
            "--max-workers",    std::to_string(s.maxWorkers),
            "--allow-networks", "127.0.0.0/8"};
  o.args.insert(o.args.end(), s.extraArgs.begin(), s.extraArgs.end());
  o.env = {std::string("WEBHOOKER_ADMIN_TOKEN=") + kAdminToken};
  o.startTimeout = std::chrono::seconds(60);
  return o;
}

}  // namespace

BenchDaemon::BenchDaemon(const std::filesystem::path& dataDir, const DaemonSettings& settings)
    : process_(dataDir, daemonOptions(settings)) {}

std::string BenchDaemon::adminPost(const std::string& path, const std::string& json) {
  const auto client = app::AdminClient::forUrl(url(), kAdminToken, std::chrono::seconds(30));
  if (!client) throw std::runtime_error(client.error().message);
  const auto answer = client.value().send("POST", path, json, "application/json");
  if (!answer) throw std::runtime_error("POST " + path + ": " + answer.error().message);
  if (!answer.value().ok())
    throw std::runtime_error("POST " + path + " failed: " + answer.value().errorText());
  return answer.value().body;
}

CreatedWebhook BenchDaemon::createWebhook(const std::string& name) {
  const auto webhook = nlohmann::json::parse(
      adminPost("/api/v1/webhooks", nlohmann::json{{"name", name}}.dump()));
  return {webhook.at("id").get<std::string>(),
          webhook.at("entrypoints").at(0).at("url").get<std::string>()};
}

std::string BenchDaemon::createVerifiedEntrypoint(const std::string& webhookId,
                                                  const std::string& secret) {
  const nlohmann::json body = {{"verification", {{"scheme", "standard"}, {"secret", secret}}}};
  return nlohmann::json::parse(
             adminPost("/api/v1/webhooks/" + webhookId + "/entrypoints", body.dump()))
      .at("url")
      .get<std::string>();
}

std::string BenchDaemon::createHttpTarget(const std::string& webhookId, const std::string& url,
                                          int maxConcurrency, const nlohmann::json& routing) {
  nlohmann::json body = {{"name", "bench"},
                         {"type", "http"},
                         {"max_concurrency", maxConcurrency},
                         {"config", {{"url", url}}}};
  body.update(routing);
  return createTarget(webhookId, body);
}

std::string BenchDaemon::createDatabaseTarget(const std::string& webhookId, int maxConcurrency) {
  return createTarget(webhookId, {{"name", "bench"},
                                  {"type", "database"},
                                  {"max_concurrency", maxConcurrency},
                                  {"config", nlohmann::json::object()}});
}

std::string BenchDaemon::createTarget(const std::string& webhookId, const nlohmann::json& body) {
  const auto target = nlohmann::json::parse(
      adminPost("/api/v1/webhooks/" + webhookId + "/targets", body.dump()));
  return target.at("id").get<std::string>();
}

double BenchDaemon::peakRssMb() const {
  std::ifstream status("/proc/" + std::to_string(pid()) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

bool BenchDaemon::waitForLog(const std::string& text, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (process_.stderrText().find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= deadline || !process_.running()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::optional<double> BenchDaemon::logValue(const std::string& event,
                                            const std::string& key) const {
  const std::string log = process_.stderrText();
  const size_t line = log.find(event);
  if (line == std::string::npos) return std::nullopt;
  const size_t end = log.find('\n', line);
  const size_t at = log.find(" " + key + "=", line);
  if (at == std::string::npos || at > end) return std::nullopt;
  try {
    return std::stod(log.substr(at + key.size() + 2));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

double idleDaemonPeakRssMb() {
  testing::TempDir empty;
  BenchDaemon idle(empty.path());
  idle.waitForLog("recovery.done", std::chrono::seconds(30));
  const double rss = idle.peakRssMb();
  idle.stop();
  return rss;
}

}  // namespace webhooker::bench
