// Internal to storage/: WHERE clauses assembled from optional filters, with
// their text parameters bound in order — the history listings and replay
// select deliveries the same way, so a dry run counts what a real run does.
#pragma once

#include <string>
#include <vector>

#include "storage/history_records.h"

namespace SQLite { class Statement; }

namespace webhooker::storage {

class SqlConditions {
 public:
  // One condition with a '?' per parameter.
  void add(std::string clause, std::vector<std::string> params = {});
  // d.status / d.target_id of `filter`, for `deliveries d`.
  void addDeliveryMatch(const HistoryFilter& filter);
  // since <= e.received_at < until and the event type, for `events e`.
  void addEventMatch(const HistoryFilter& filter);
  // Rows before `key` in newest-first order of (timeColumn, idColumn).
  void addBefore(const PageKey& key, const std::string& timeColumn, const std::string& idColumn);

  bool empty() const { return clauses_.empty(); }
  // "a AND b", or "1" when there is no condition.
  std::string joined() const;
  const std::vector<std::string>& params() const { return params_; }
  // Binds the parameters from index `first`; returns the next free index.
  int bind(SQLite::Statement& statement, int first = 1) const;

 private:
  std::vector<std::string> clauses_;
  std::vector<std::string> params_;
};

// "?, ?, ?" for n values.
std::string placeholders(size_t n);

}  // namespace webhooker::storage
