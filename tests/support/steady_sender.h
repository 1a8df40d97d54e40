// SteadySender: a webhook sender posting numbered events ({"seq": n}) to a
// daemon from its own thread, one after another, until stop() or until the
// daemon stops answering (a kill -9). acknowledged() is the event ids the
// daemon answered 200 for: what must never be lost. For the crash tests of
// the queue targets, which kill the daemon while events still stream in.
#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/daemon_api.h"
#include "tests/support/engine_harness.h"

namespace webhooker::testing {

class SteadySender {
 public:
  SteadySender(const DaemonApi& api, std::string hookPath, int maxEvents)
      : thread_([this, &api, path = std::move(hookPath), maxEvents] {
          httplib::Client client = api.sender();
          for (int i = 1; i <= maxEvents && !stop_; ++i) {
            auto r = client.Post(path, nlohmann::json{{"seq", i}}.dump(), "application/json");
            if (!r || r->status != 200) return;
            std::lock_guard lock(mutex_);
            acknowledged_.push_back(nlohmann::json::parse(r->body).at("event_id"));
          }
        }) {}
  ~SteadySender() { stop(); }

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  std::vector<std::string> acknowledged() const {
    std::lock_guard lock(mutex_);
    return acknowledged_;
  }

 private:
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;  // guards acknowledged_
  std::vector<std::string> acknowledged_;
  std::thread thread_;  // last: starts once the rest exists
};

// Deliveries of the webhook still pending or retrying in the daemon's data
// folder `dataDir` (read-only): 0 once the daemon has nothing more to send.
inline int unfinishedDeliveries(const std::filesystem::path& dataDir, const std::string& webhookId) {
  SQLite::Database db = openReadOnly(dataDir / ("events-" + webhookId + ".db"));
  return db.execAndGet("SELECT COUNT(*) FROM deliveries WHERE status NOT IN ('delivered', 'failed')")
      .getInt();
}

}  // namespace webhooker::testing
