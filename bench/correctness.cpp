#include "bench/correctness.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <strings.h>

#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace webhooker::bench {

namespace {

constexpr size_t kMaxReported = 10;

int64_t seqOf(const std::string& headersJson) {
  for (const auto& pair : nlohmann::json::parse(headersJson))
    if (strcasecmp(pair.at(0).get<std::string>().c_str(), kSeqHeader) == 0)
      return std::stoll(pair.at(1).get<std::string>());
  return -1;
}

struct StoredDeliveryRow {
  std::string targetId;
  std::string status;
};

class Violations {
 public:
  void add(std::string line) {
    ++count_;
    if (lines_.size() < kMaxReported) lines_.push_back(std::move(line));
  }
  std::vector<std::string> take() {
    if (count_ > lines_.size())
      lines_.push_back(std::to_string(count_ - lines_.size()) + " more violations");
    return std::move(lines_);
  }

 private:
  size_t count_ = 0;
  std::vector<std::string> lines_;
};

void checkWebhook(const CorrectnessSpec& spec, const WebhookExpectation& webhook,
                  const std::map<std::string, std::unordered_set<int64_t>>& received,
                  Violations& violations) {
  SQLite::Database db((spec.dataDir / ("events-" + webhook.id + ".db")).string(),
                      SQLite::OPEN_READONLY);
  std::unordered_map<std::string, int64_t> seqByEvent;
  std::unordered_map<int64_t, std::vector<StoredDeliveryRow>> deliveriesBySeq;
  SQLite::Statement events(db, "SELECT id, headers FROM events");
  while (events.executeStep()) {
    const int64_t seq = seqOf(events.getColumn(1).getString());
    seqByEvent[events.getColumn(0).getString()] = seq;
    deliveriesBySeq[seq];
  }
  SQLite::Statement deliveries(db, "SELECT event_id, target_id, status FROM deliveries");
  while (deliveries.executeStep()) {
    const auto event = seqByEvent.find(deliveries.getColumn(0).getString());
    if (event == seqByEvent.end()) continue;  // the foreign key makes this impossible
    deliveriesBySeq[event->second].push_back(
        {deliveries.getColumn(1).getString(), deliveries.getColumn(2).getString()});
  }

  const std::multiset<std::string> expectedTargets(webhook.targetIds.begin(), webhook.targetIds.end());
  for (const int64_t seq : webhook.acceptedSeqs) {
    const auto stored = deliveriesBySeq.find(seq);
    if (stored == deliveriesBySeq.end()) {
      violations.add("event seq " + std::to_string(seq) + " was acknowledged but is not stored");
      continue;
    }
    std::multiset<std::string> targets;
    for (const StoredDeliveryRow& d : stored->second) {
      targets.insert(d.targetId);
      if (spec.drainedTargets.count(d.targetId) && d.status != "delivered")
        violations.add("event seq " + std::to_string(seq) + ": delivery to " + d.targetId + " is " +
                       d.status + ", expected delivered");
      const auto receiver = received.find(d.targetId);
      if (d.status == "delivered" && receiver != received.end() && !receiver->second.count(seq))
        violations.add("event seq " + std::to_string(seq) + ": delivered to " + d.targetId +
                       " per the DB, but its receiver never got it");
    }
    if (targets != expectedTargets)
      violations.add("event seq " + std::to_string(seq) + " has " +
                     std::to_string(stored->second.size()) + " deliveries, expected one per target (" +
                     std::to_string(expectedTargets.size()) + ")");
  }
}

}  // namespace

std::vector<std::string> checkCorrectness(const CorrectnessSpec& spec) {
  std::map<std::string, std::unordered_set<int64_t>> received;
  for (const auto& [targetId, receiver] : spec.receivers)
    for (const Arrival& a : receiver->arrivals()) received[targetId].insert(a.seq);
  Violations violations;
  for (const WebhookExpectation& webhook : spec.webhooks) {
    try {
      checkWebhook(spec, webhook, received, violations);
    } catch (const std::exception& e) {
      violations.add("webhook " + webhook.id + ": cannot read its events DB: " + e.what());
    }
  }
  return violations.take();
}

}  // namespace webhooker::bench
