// Management commands that call a running daemon's admin API:
// `webhooker webhooks|entrypoints|targets|events|deliveries ...`, `webhooker
// redeliver` and `webhooker replay`. The daemon's address comes
// from --url (WEBHOOKER_URL, default http://127.0.0.1:8080), the token from
// WEBHOOKER_TOKEN only: a token on the command line would show in `ps`.
#pragma once

#include <CLI/CLI.hpp>

namespace webhooker::app {

// Adds the subcommands to `app`. When one of them runs (as a CLI11 callback
// after parsing), its process exit code is stored in `exitCode`: 0 success,
// 1 the API answered an error or could not be reached.
void addClientCommands(CLI::App& app, int& exitCode);

}  // namespace webhooker::app
