// `webhooker backup <dir>`: a consistent copy of every database of the data
// folder, taken while the daemon runs. Restoring is copying the files back
// into an empty data folder with the daemon stopped (see docs/operations.md).
#include <iostream>

#include "app/commands.h"
#include "storage/backup.h"

namespace webhooker::app {

int runBackup(const Config& config, const std::filesystem::path& targetDir) {
  const std::filesystem::path dataDir = config.dataPath();
  auto copied = backupDataDir(dataDir, targetDir, config.dbOptions().busyTimeoutMs);
  if (!copied) {
    std::cerr << "webhooker: backup failed: " << copied.error().message << "\n";
    return 1;
  }
  int64_t total = 0;
  for (const BackupFile& f : copied.value()) {
    std::cout << "copied " << f.name << " (" << f.bytes << " bytes)\n";
    total += f.bytes;
  }
  std::cout << "backup of " << dataDir.string() << " written to " << targetDir.string() << ": "
            << copied->size() << " databases, " << total << " bytes\n";
  return 0;
}

}  // namespace webhooker::app
