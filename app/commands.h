// The daemon-side commands: each takes the parsed Config and returns the
// process exit code (0 success, 1 failure; messages already printed).
#pragma once

#include "app/config.h"

namespace webhooker::app {

// `webhooker serve`: runs until SIGTERM/SIGINT.
int runServe(const Config& config);
// `webhooker migrate`: brings webhooker.db and every events DB to this
// binary's schema; a no-op on up-to-date files.
int runMigrate(const Config& config);
// `webhooker admin-token --reset`: replaces the admin token, prints the new
// one once. Takes effect on a running daemon at once.
int runAdminTokenReset(const Config& config);
// `webhooker backup <dir>`: copies webhooker.db and every events DB into
// `targetDir` (created; refused unless empty), a running daemon or not.
int runBackup(const Config& config, const std::filesystem::path& targetDir);

}  // namespace webhooker::app
