#include "tests/support/read_only_db.h"

namespace webhooker::testing {

SQLite::Database openReadOnly(const std::filesystem::path& file) {
  SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
  db.setBusyTimeout(5000);
  return db;
}

}  // namespace webhooker::testing
