// webhooker: store-and-forward webhook delivery. `webhooker` alone serves.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "app/client_commands.h"
#include "app/commands.h"
#include "app/config.h"
#include "app/logging.h"

int main(int argc, char** argv) {
  using namespace webhooker::app;
  CLI::App app{"webhooker: a self-hosted webhook delivery engine"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", "webhooker 0.1.0");

  Config config;
  auto* serve = app.add_subcommand("serve", "run the daemon (the default command)");
  addServeOptions(*serve, config);
  auto* migrate = app.add_subcommand("migrate", "bring every database to this binary's schema");
  addStorageOptions(*migrate, config);
  auto* adminToken = app.add_subcommand("admin-token", "manage the admin API token");
  addStorageOptions(*adminToken, config);
  bool reset = false;
  adminToken->add_flag("--reset", reset, "replace the token with a new one and print it once")
      ->required();

  int clientExit = 0;
  addClientCommands(app, clientExit);

  // `webhooker` alone is `webhooker serve`, with serve's env variables.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) args.push_back("serve");
  std::reverse(args.begin(), args.end());  // CLI11 takes them last-first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (auto r = finishConfig(config); !r) {
    std::cerr << "webhooker: " << r.error().message << "\n";
    return 2;
  }
  if (*migrate) return runMigrate(config);
  if (*adminToken) return runAdminTokenReset(config);
  if (*serve) {
    setupLogging(config.logLevel);
    return runServe(config);
  }
  return clientExit;
}
