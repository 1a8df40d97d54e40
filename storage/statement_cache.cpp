#include "storage/statement_cache.h"

namespace webhooker::storage {

StatementCache::Borrowed StatementCache::get(std::string_view sql) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    std::string text(sql);
    auto statement = std::make_unique<SQLite::Statement>(db_, text);
    it = statements_.emplace(std::move(text), std::move(statement)).first;
  }
  return Borrowed(*it->second);
}

}  // namespace webhooker::storage
