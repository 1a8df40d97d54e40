#include "bench/correctness.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <strings.h>

#include <nlohmann/json.hpp>
#include <algorithm>
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

// What one target's receiver got, by X-Bench-Seq: the hash of each copy.
using ReceivedBodies = std::unordered_map<int64_t, std::vector<uint64_t>>;

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

// Checks one webhook's events DB; adds the seqs it stores for each target
// to `stored`, for the receivers' side of the check.
void checkWebhook(const CorrectnessSpec& spec, const WebhookExpectation& webhook,
                  const std::map<std::string, const ReceivedBodies*>& received,
                  std::map<std::string, std::unordered_set<int64_t>>& stored,
                  Violations& violations) {
  if (webhook.acceptedSeqs.empty()) {
    violations.add("webhook " + webhook.id + ": no event was acknowledged, so nothing was checked");
    return;
  }
  SQLite::Database db((spec.dataDir / ("events-" + webhook.id + ".db")).string(),
                      SQLite::OPEN_READONLY);
  const bool hasReceiver = std::any_of(webhook.targetIds.begin(), webhook.targetIds.end(),
                                       [&](const std::string& t) { return received.count(t) > 0; });
  std::unordered_map<std::string, int64_t> seqByEvent;
  std::unordered_map<int64_t, uint64_t> bodyHashBySeq;
  std::unordered_map<int64_t, std::vector<StoredDeliveryRow>> deliveriesBySeq;
  // Bodies are read only where a receiver's copies are to be compared: the
  // memory scenarios store a million events nobody receives.
  SQLite::Statement events(db, hasReceiver ? "SELECT id, headers, body FROM events"
                                           : "SELECT id, headers, NULL FROM events");
  while (events.executeStep()) {
    const int64_t seq = seqOf(events.getColumn(1).getString());
    seqByEvent[events.getColumn(0).getString()] = seq;
    deliveriesBySeq[seq];
    if (hasReceiver) {
      const SQLite::Column body = events.getColumn(2);
      bodyHashBySeq[seq] = bodyHash({static_cast<const char*>(body.getBlob()),
                                     static_cast<size_t>(body.getBytes())});
    }
  }
  SQLite::Statement deliveries(db, "SELECT event_id, target_id, status FROM deliveries");
  while (deliveries.executeStep()) {
    const auto event = seqByEvent.find(deliveries.getColumn(0).getString());
    if (event == seqByEvent.end()) continue;  // the foreign key makes this impossible
    deliveriesBySeq[event->second].push_back(
        {deliveries.getColumn(1).getString(), deliveries.getColumn(2).getString()});
    stored[deliveries.getColumn(1).getString()].insert(event->second);
  }

  const std::multiset<std::string> expectedTargets(webhook.targetIds.begin(), webhook.targetIds.end());
  for (const int64_t seq : webhook.acceptedSeqs) {
    const std::string what = "event seq " + std::to_string(seq);
    const auto found = deliveriesBySeq.find(seq);
    if (found == deliveriesBySeq.end()) {
      violations.add(what + " was acknowledged but is not stored");
      continue;
    }
    std::multiset<std::string> targets;
    for (const StoredDeliveryRow& d : found->second) {
      targets.insert(d.targetId);
      if (spec.drainedTargets.count(d.targetId) && d.status != "delivered")
        violations.add(what + ": delivery to " + d.targetId + " is " + d.status +
                       ", expected delivered");
      const auto receiver = received.find(d.targetId);
      if (receiver == received.end()) continue;
      const auto copies = receiver->second->find(seq);
      if (copies == receiver->second->end()) {
        if (d.status == "delivered")
          violations.add(what + ": delivered to " + d.targetId +
                         " per the DB, but its receiver never got it");
        continue;
      }
      if (copies->second.size() > 1)
        violations.add(what + ": " + d.targetId + "'s receiver got it " +
                       std::to_string(copies->second.size()) + " times");
      if (spec.reshapedTargets.count(d.targetId)) continue;
      for (const uint64_t hash : copies->second)
        if (hash != bodyHashBySeq[seq]) {
          violations.add(what + ": " + d.targetId + "'s receiver got a body that differs from the stored one");
          break;
        }
    }
    if (targets != expectedTargets)
      violations.add(what + " has " + std::to_string(found->second.size()) +
                     " deliveries, expected one per target (" +
                     std::to_string(expectedTargets.size()) + ")");
  }
}

}  // namespace

std::vector<std::string> checkCorrectness(const CorrectnessSpec& spec) {
  // Indexed once per receiver, not per target: a thousand targets may
  // share one receiver.
  std::map<const BenchReceiver*, ReceivedBodies> receivedBy;
  std::map<std::string, const ReceivedBodies*> received;  // by target id
  for (const auto& [targetId, receiver] : spec.receivers) {
    const auto [bodies, added] = receivedBy.try_emplace(receiver);
    if (added)
      for (const Arrival& a : receiver->arrivals()) bodies->second[a.seq].push_back(a.bodyHash);
    received[targetId] = &bodies->second;
  }
  Violations violations;
  if (spec.webhooks.empty()) violations.add("no webhook to check");
  std::map<std::string, std::unordered_set<int64_t>> stored;  // seqs by target
  for (const WebhookExpectation& webhook : spec.webhooks) {
    try {
      checkWebhook(spec, webhook, received, stored, violations);
    } catch (const std::exception& e) {
      violations.add("webhook " + webhook.id + ": cannot read its events DB: " + e.what());
    }
  }
  // A receiver may serve several targets (of different webhooks): what it
  // got must match a stored delivery of one of them.
  std::map<const BenchReceiver*, std::unordered_set<int64_t>> storedByReceiver;
  for (const auto& [targetId, receiver] : spec.receivers)
    storedByReceiver[receiver].merge(stored[targetId]);
  for (const auto& [receiver, known] : storedByReceiver)
    for (const auto& [seq, copies] : receivedBy.at(receiver))
      if (!known.count(seq))
        violations.add("a receiver got " + std::to_string(copies.size()) + " request(s) with seq " +
                       std::to_string(seq) + ", which matches no stored delivery of its targets");
  return violations.take();
}

}  // namespace webhooker::bench
