// DbFile: a database file in a fresh temp dir, the fake clock the store on it
// runs on, and independent read-only connections to check what landed in the
// file, apart from the store's own API. sqlText quotes a value for such a
// check's SQL.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <filesystem>
#include <string>

#include "tests/support/fake_clock.h"
#include "tests/support/temp_dir.h"

namespace webhooker::testing {

struct DbFile {
  TempDir dir;
  FakeClock clock;
  std::filesystem::path file;

  explicit DbFile(const std::string& name) : file(dir / name) {}

  SQLite::Database raw() const { return SQLite::Database(file.string(), SQLite::OPEN_READONLY); }
  int count(const std::string& sql) const { return raw().execAndGet(sql).getInt(); }
};

inline std::string sqlText(const std::string& s) { return "'" + s + "'"; }

}  // namespace webhooker::testing
