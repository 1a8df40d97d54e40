#include "storage/sql_conditions.h"

#include "storage/sqlite_database.h"

namespace webhooker::storage {

void SqlConditions::add(std::string clause, std::vector<std::string> params) {
  clauses_.push_back("(" + std::move(clause) + ")");
  for (std::string& p : params) params_.push_back(std::move(p));
}

void SqlConditions::addDeliveryMatch(const HistoryFilter& filter) {
  if (!filter.statuses.empty()) {
    std::vector<std::string> texts;
    for (DeliveryStatus s : filter.statuses) texts.push_back(statusText(s));
    add("d.status IN (" + placeholders(filter.statuses.size()) + ")", std::move(texts));
  }
  if (filter.targetId) add("d.target_id = ?", {*filter.targetId});
}

void SqlConditions::addEventMatch(const HistoryFilter& filter) {
  if (filter.since) add("e.received_at >= ?", {*filter.since});
  if (filter.until) add("e.received_at < ?", {*filter.until});
  if (!filter.eventType) return;
  const std::string& type = *filter.eventType;
  if (type.ends_with(".*")) {
    // A range on the index: "prefix." <= type < "prefix/" ('/' follows '.').
    const std::string prefix = type.substr(0, type.size() - 1);
    add("e.event_type >= ? AND e.event_type < ?", {prefix, prefix.substr(0, prefix.size() - 1) + "/"});
  } else {
    add("e.event_type = ?", {type});
  }
}

void SqlConditions::addBefore(const PageKey& key, const std::string& timeColumn,
                              const std::string& idColumn) {
  // Spelled out rather than as a row value so the time index still serves.
  add(timeColumn + " <= ? AND (" + timeColumn + " < ? OR " + idColumn + " < ?)",
      {key.time, key.time, key.id});
}

std::string SqlConditions::joined() const {
  if (clauses_.empty()) return "1";
  std::string out;
  for (const std::string& c : clauses_) {
    if (!out.empty()) out += " AND ";
    out += c;
  }
  return out;
}

int SqlConditions::bind(SQLite::Statement& statement, int first) const {
  for (const std::string& p : params_) statement.bind(first++, p);
  return first;
}

std::string placeholders(size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += i == 0 ? "?" : ", ?";
  return out;
}

}  // namespace webhooker::storage
