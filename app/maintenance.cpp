// `webhooker migrate` and `webhooker admin-token --reset`: work on the data
// folder directly, with or without a running daemon.
#include <filesystem>
#include <iostream>
#include <system_error>

#include "app/admin_token_handover.h"
#include "app/commands.h"
#include "base/clock.h"
#include "base/private_folder.h"
#include "server/admin_token.h"
#include "storage/main_store.h"
#include "storage/schema.h"

namespace webhooker::app {

namespace {

bool report(const std::filesystem::path& file, const Result<SchemaChange>& change) {
  if (!change) {
    std::cerr << "webhooker: " << change.error().message << "\n";
    return false;
  }
  if (change->before == change->after)
    std::cout << file.filename().string() << ": up to date (schema " << change->after << ")\n";
  else
    std::cout << file.filename().string() << ": migrated from schema " << change->before << " to "
              << change->after << "\n";
  return true;
}

}  // namespace

int runMigrate(const Config& config) {
  const std::filesystem::path dataDir = config.dataPath();
  if (auto folder = ensurePrivateFolder(dataDir); !folder) {
    std::cerr << "webhooker: " << folder.error().message << "\n";
    return 1;
  }
  std::error_code ec;
  const auto mainDb = dataDir / "webhooker.db";
  bool ok = report(mainDb, migrateFile(mainDb, DbKind::kMain, config.dbOptions()));
  for (const auto& entry : std::filesystem::directory_iterator(dataDir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("events-", 0) == 0 && entry.path().extension() == ".db")
      ok = report(entry.path(), migrateFile(entry.path(), DbKind::kEvents, config.dbOptions())) && ok;
  }
  return ok ? 0 : 1;
}

int runAdminTokenReset(const Config& config) {
  const auto mainDb = config.dataPath() / "webhooker.db";
  // A mistyped folder must not silently get a new database and token.
  if (!std::filesystem::exists(mainDb)) {
    std::cerr << "webhooker: " << mainDb.string()
              << " does not exist; check --data-dir (or DATA_DIR)\n";
    return 1;
  }
  SystemClock clock;
  auto store = MainStore::open(mainDb, config.dbOptions(), clock);
  if (!store) {
    std::cerr << "webhooker: " << store.error().message << "\n";
    return 1;
  }
  auto token = server::resetAdminToken(*store.value());
  if (!token) {
    std::cerr << "webhooker: " << token.error().message << "\n";
    return 1;
  }
  std::cout << "New admin token (shown once; the old one no longer works):\n  " << token.value()
            << "\n";
  // A token the first start handed over in a file is revoked now: the file
  // must not go on looking like the way in.
  const auto handedOver = config.dataPath() / kAdminTokenFile;
  std::error_code ec;
  if (std::filesystem::remove(handedOver, ec)) {
    std::cout << "Removed " << handedOver.string() << ", which held the old token.\n";
  } else if (ec) {
    std::cerr << "webhooker: " << handedOver.string() << " holds the old token and could not be "
              << "removed (" << ec.message() << "); delete it\n";
    return 1;
  }
  return 0;
}

}  // namespace webhooker::app
