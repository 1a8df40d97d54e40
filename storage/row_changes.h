// What a transaction changed, as the commit journal keeps it
// (storage/commit_journal.h): each row it inserted or updated, with all its
// values, and each row it deleted, with its old values, in order, every
// table but journal_position. ChangeRecorder records them from SQLite's
// pre-update hook; RowWriter writes them into a file again (replay).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct sqlite3;
namespace SQLite {
class Database;
class Statement;
}  // namespace SQLite

namespace webhooker::storage {

// Records the changes of the connection's transactions from construction
// on. A savepoint rolled back takes its changes back with forgetSince().
// Threading: the connection's.
class ChangeRecorder {
 public:
  explicit ChangeRecorder(sqlite3* db);
  ~ChangeRecorder();
  ChangeRecorder(const ChangeRecorder&) = delete;
  ChangeRecorder& operator=(const ChangeRecorder&) = delete;

  // Where the record stands now, for forgetSince().
  size_t mark() const { return changes_.size(); }
  // Drops the changes recorded after `mark`.
  void forgetSince(size_t mark) { changes_.resize(mark); }
  // The changes so far (CommitJournal::Record::changes); empties this.
  std::string take() { return std::move(changes_); }

 private:
  static void onChange(void* self, sqlite3* db, int op, const char* schema, const char* table,
                       long long oldRowid, long long newRowid);
  sqlite3* const db_;
  std::string changes_;
};

// Writes recorded changes into `db`, in its open transaction: each written
// row again by the table's key (an upsert of all its recorded values), each
// deleted row deleted by its key. Keeps its statements for the next
// changes. Throws when the changes do not fit the file's tables.
class RowWriter {
 public:
  explicit RowWriter(SQLite::Database& db);
  ~RowWriter();
  RowWriter(const RowWriter&) = delete;
  RowWriter& operator=(const RowWriter&) = delete;

  void apply(std::string_view changes);

 private:
  struct Table {
    std::vector<std::string> columns;
    std::vector<size_t> key;  // column indexes, in the key's order
  };
  const Table& tableOf(const std::string& name);
  SQLite::Statement& statement(uint8_t kind, const std::string& name, uint16_t columns);

  SQLite::Database& db_;
  std::unordered_map<std::string, Table> tables_;
  std::unordered_map<std::string, std::unique_ptr<SQLite::Statement>> statements_;
};

}  // namespace webhooker::storage
