// webhooker: store-and-forward webhook delivery. `webhooker` alone, or
// followed by serve's options, serves.
#include <CLI/CLI.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "app/client_commands.h"
#include "app/cluster_commands.h"
#include "app/commands.h"
#include "app/config.h"
#include "app/logging.h"
#include "app/version.h"
#include "routing/jq_worker.h"
#include "storage/schema.h"

namespace {

// A bad value must stop a service with one line that names the setting as
// the admin wrote it: in the environment file that is the variable, which
// CLI11's own message ("--workers: Value lots not in range ...") leaves out.
std::string oneLineFailure(const CLI::App* app, const CLI::Error& e) {
  std::string line = std::string("webhooker: ") + e.what();
  const std::string what = e.what();
  const std::string flag = what.substr(0, what.find(':'));
  if (flag.starts_with("--")) {
    for (const CLI::App* command : app->get_subcommands([](const CLI::App*) { return true; })) {
      const CLI::Option* option = command->get_option_no_throw(flag);
      if (option && !option->get_envname().empty()) {
        line += " (environment " + option->get_envname() + ")";
        break;
      }
    }
  }
  return line + "\n";
}

}  // namespace

int main(int argc, char** argv) {
  // The daemon's jq workers are this binary again (routing/jq_worker.h).
  if (const auto worker = webhooker::runJqWorkerIfAsked(argc, argv)) return *worker;
  using namespace webhooker::app;
  // Whatever this process creates (databases and their -wal and -shm,
  // backups, the admin token file, folders) is its owner's alone: 0600 and
  // 0700, whatever umask it was started with.
  ::umask(077);
  // Named, so usage lines read `Usage: webhooker serve [OPTIONS]`.
  CLI::App app{"webhooker: a self-hosted webhook delivery engine", "webhooker"};
  app.require_subcommand(0, 1);
  app.failure_message(oneLineFailure);  // before the subcommands, which copy it
  app.set_version_flag("--version", versionText());

  // One Config per command: CLI11 applies environment variables to the
  // options of every subcommand, run or not, so a shared Config would let
  // DATA_DIR override another command's --data-dir.
  Config serveConfig, migrateConfig, tokenConfig, backupConfig;
  auto* serve = app.add_subcommand("serve", "run the daemon (the default command)");
  addServeOptions(*serve, serveConfig);
  auto* migrate = app.add_subcommand("migrate", "bring every database to this binary's schema");
  addStorageOptions(*migrate, migrateConfig);
  auto* adminToken = app.add_subcommand("admin-token", "manage the admin API token");
  addStorageOptions(*adminToken, tokenConfig);
  bool reset = false;
  adminToken->add_flag("--reset", reset, "replace the token with a new one and print it once")
      ->required();
  auto* backup = app.add_subcommand(
      "backup", "copy every database into a new folder, while the daemon runs or not");
  addStorageOptions(*backup, backupConfig);
  std::string backupDir;
  backup->add_option("DIR", backupDir, "the folder to write the copies to (new or empty)")
      ->required();

  // The history view for the sqlite3 CLI, made for its connection only:
  // sqlite3 -cmd "$(webhooker history-view)" events-<id>.db 'select * from delivery_history'
  app.add_subcommand("history-view",
                     "print the delivery_history view (a TEMP VIEW) for sqlite3 -cmd")
      ->callback([] { std::cout << webhooker::deliveryHistoryView() << "\n"; });

  int clientExit = 0;
  addClientCommands(app, clientExit);
  addClusterCommands(app, clientExit);

  // `webhooker` alone, or `webhooker --port 9000`, is `webhooker serve ...`,
  // with serve's env variables. --help and --version stay the program's.
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool startsWithOption = !args.empty() && args[0].starts_with("-") && args[0] != "--help" &&
                                args[0] != "-h" && args[0] != "--version";
  if (args.empty() || startsWithOption) args.insert(args.begin(), "serve");
  std::reverse(args.begin(), args.end());  // CLI11 takes them last-first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    // Every usage error is exit 2, like an invalid config below: the unit
    // does not restart on it (RestartPreventExitStatus=2).
    return app.exit(e) == 0 ? 0 : 2;
  }
  Config* config = *serve ? &serveConfig : *migrate ? &migrateConfig : *adminToken ? &tokenConfig : nullptr;
  if (*backup) config = &backupConfig;
  if (!config) return clientExit;  // a client command ran in a parse callback
  if (auto r = finishConfig(*config); !r) {
    std::cerr << "webhooker: " << r.error().message << "\n";
    return 2;
  }
  if (*migrate) return runMigrate(*config);
  if (*adminToken) return runAdminTokenReset(*config);
  if (*backup) return runBackup(*config, backupDir);
  setupLogging(config->logLevel, config->logFormat);
  return runServe(*config);
}
