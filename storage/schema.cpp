#include "storage/schema.h"

#include "storage/sqlite_database.h"

namespace webhooker {

Result<SchemaChange> migrateFile(const std::filesystem::path& file, DbKind kind,
                                 const DbOptions& options) {
  SchemaChange change;
  auto db = storage::openDatabase(file, options,
                                  kind == DbKind::kMain ? mainMigrations() : eventsMigrations(),
                                  &change.before);
  if (!db) return db.error();
  change.after = storage::schemaVersion(*db.value());
  return change;
}

}  // namespace webhooker
