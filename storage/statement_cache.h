// Internal to storage/: prepared statements kept per connection, so a hot
// path compiles its SQL once instead of on every call.
//
// Ownership: owned next to the connection it prepares on, and destroyed
// before it. Threading: none of its own; callers hold the mutex that guards
// the connection for as long as they use a statement.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace webhooker::storage {

class StatementCache {
 public:
  // A borrowed statement with no bindings. When the borrow ends it is reset,
  // so an unfinished SELECT never keeps a read transaction open, and its
  // bindings are cleared, so no pointer bound without a copy outlives it.
  class Borrowed {
   public:
    explicit Borrowed(SQLite::Statement& statement) : statement_(statement) {}
    ~Borrowed() {
      statement_.tryReset();
      statement_.clearBindings();  // sqlite3_clear_bindings cannot fail
    }
    Borrowed(const Borrowed&) = delete;
    Borrowed& operator=(const Borrowed&) = delete;
    SQLite::Statement* operator->() { return &statement_; }
    SQLite::Statement& operator*() { return statement_; }

   private:
    SQLite::Statement& statement_;
  };

  explicit StatementCache(SQLite::Database& db) : db_(db) {}

  // Prepares `sql` on first use. Throws SQLite::Exception like Statement.
  // One borrow of a given SQL at a time.
  Borrowed get(std::string_view sql);

  // Statements every cache of the process has prepared so far. A
  // connection's are prepared again by each reopen of its file, so this is
  // part of what a reopen costs.
  static uint64_t preparedSoFar();

 private:
  // Looks statements up by a string_view of their SQL, without a copy.
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view sql) const { return std::hash<std::string_view>()(sql); }
  };

  SQLite::Database& db_;
  std::unordered_map<std::string, std::unique_ptr<SQLite::Statement>, SqlHash, std::equal_to<>>
      statements_;
};

}  // namespace webhooker::storage
