#include "storage/statement_cache.h"

#include <atomic>

namespace webhooker::storage {

namespace {
std::atomic<uint64_t> prepared{0};
}  // namespace

uint64_t StatementCache::preparedSoFar() { return prepared.load(std::memory_order_relaxed); }

StatementCache::Borrowed StatementCache::get(std::string_view sql) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    std::string text(sql);
    auto statement = std::make_unique<SQLite::Statement>(db_, text);
    it = statements_.emplace(std::move(text), std::move(statement)).first;
    prepared.fetch_add(1, std::memory_order_relaxed);
  }
  return Borrowed(*it->second);
}

}  // namespace webhooker::storage
