// BenchDaemon: the real webhooker binary (WEBHOOKER_BIN) serving a data
// folder, driven black-box through its admin API, plus what the benchmarks
// read from outside: its log and its peak RSS.
//
// Threading: drive it from one thread.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/daemon_process.h"

namespace webhooker::bench {

inline constexpr const char* kAdminToken = "whk_bench_admin_token_0123456789";

struct DaemonSettings {
  std::string syncMode = "full";
  std::string flushScope = "journal";
  int httpThreads = 8;
  int workers = 8;
  int maxWorkers = 64;
  std::vector<std::string> extraArgs;
};

struct CreatedWebhook {
  std::string id;
  std::string hookPath;  // /hooks/<entrypoint-uuid>
};

class BenchDaemon {
 public:
  BenchDaemon(const std::filesystem::path& dataDir, const DaemonSettings& settings = {});

  std::string url() const { return process_.url(); }
  pid_t pid() const { return process_.pid(); }

  // Admin API calls; a failure throws std::runtime_error with the answer.
  CreatedWebhook createWebhook(const std::string& name);
  // Another entrypoint of the webhook, verifying Standard Webhooks signatures
  // with `secret`: its /hooks/<id> path.
  std::string createVerifiedEntrypoint(const std::string& webhookId, const std::string& secret);
  // `routing`: the target's filter, transform and rate_limit fields, if any.
  std::string createHttpTarget(const std::string& webhookId, const std::string& url,
                               int maxConcurrency,
                               const nlohmann::json& routing = nlohmann::json::object());
  // A database target: each delivery records, in the events DB, that its
  // event is stored.
  std::string createDatabaseTarget(const std::string& webhookId, int maxConcurrency);

  // Peak resident set size (VmHWM) so far, in MB.
  double peakRssMb() const;
  // Waits until the log holds `text`; false at the timeout.
  bool waitForLog(const std::string& text, std::chrono::milliseconds timeout) const;
  // The number after `key=` in the first log line holding `event`; nullopt
  // if there is none.
  std::optional<double> logValue(const std::string& event, const std::string& key) const;
  // SIGTERM and wait: the clean stop every scenario ends with.
  int stop() { return process_.stop(std::chrono::seconds(30)); }
  // POST to the admin API; the answer's body.
  std::string adminPost(const std::string& path, const std::string& json);

 private:
  std::string createTarget(const std::string& webhookId, const nlohmann::json& body);

  testing::DaemonProcess process_;
};

// Peak RSS of a daemon started on an empty data folder, once recovered: the
// least the binary needs.
double idleDaemonPeakRssMb();

}  // namespace webhooker::bench
