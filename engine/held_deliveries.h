// HeldDeliveries: the deliveries the engine holds in memory (queued, in
// flight, their result still being written, or waiting for their retry
// time), so recovery, the sweep and refills never schedule one twice.
//
// A reconcile may read a delivery as unfinished just before an attempt
// finishes it. Releases are numbered while a reconcile runs; each reconcile
// notes the count when it opens and skips what was released after that
// (releasedSince). A number goes once no open reconcile started before it,
// so one reconcile's bookkeeping never holds back another's or a fresh submit.
//
// Ownership: a plain value. Threading: none of its own; the engine calls it
// under its mutex.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace webhooker {

class HeldDeliveries {
 public:
  // False if held already or, for a delivery a reconcile read (`readSince`:
  // that reconcile's start), released since.
  bool hold(const std::string& deliveryId, std::optional<uint64_t> readSince = std::nullopt);
  bool holds(const std::string& deliveryId) const { return held_.count(deliveryId) > 0; }
  size_t size() const { return held_.size(); }
  // An attempt in flight asked for a retry of its delivery: the delivery
  // stays held past that attempt's end, for the retry.
  void holdForRetry(const std::string& deliveryId);
  // An attempt's result is written. True if the delivery left memory (no
  // retry of it is pending), numbered for the open reconciles.
  bool attemptFinished(const std::string& deliveryId);
  // The retry timer had no room for a retry: true if the delivery left
  // memory (its attempt had ended). Not a release: the delivery is
  // unfinished, and a reconcile that read it may take it again.
  bool letGoOfRetry(const std::string& deliveryId);
  // A held delivery the queues had no room for leaves memory; not a release.
  void drop(const std::string& deliveryId) { held_.erase(deliveryId); }

  // A reconcile opens before its read and closes when it has acted on it.
  uint64_t openReconcile();
  void closeReconcile(uint64_t started);
  bool releasedSince(const std::string& deliveryId, uint64_t started) const;

 private:
  // If an attempt of the delivery asked for a retry, counts one such down
  // and returns true: the delivery stays held.
  bool consumeRetryHold(const std::string& deliveryId);

  std::unordered_set<std::string> held_;
  // In flight and asked for a retry: how many such attempts are still to
  // finish (a quick retry can finish before the attempt that scheduled it).
  std::unordered_map<std::string, int> rescheduled_;
  uint64_t releases_ = 0;
  std::multiset<uint64_t> reconcileStarts_;
  std::unordered_map<std::string, uint64_t> released_;  // id -> its release number
};

}  // namespace webhooker
