// webhooker_bench: every benchmark scenario in one go (`make bench`). Prints
// the table, writes the JSON, and exits non-zero if a correctness check
// failed. Goals are judged, never enforced: a miss is reported, not fatal.
//
//   webhooker_bench [--large | --moonshot | --smoke] [--runs N] [--only SCENARIO...] [--out FILE]
//
// The daemon binary comes from WEBHOOKER_BIN.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <map>

#include "bench/body_generator.h"
#include "bench/leftover_janitor.h"
#include "bench/report.h"
#include "bench/scenarios.h"

using namespace webhooker::bench;

int main(int argc, char** argv) {
  const LeftoverJanitor janitor;  // before any thread or temp folder exists
  CLI::App app("webhooker benchmarks: each figure against a baseline measured in the same run");
  bool large = false;
  bool smoke = false;
  std::vector<std::string> only;
  int runs = 1;
  std::string syncMode = "full";
  std::string flushScope = "journal";
  std::string out = "build/bench/results.json";
  CLI::Option* largeFlag = app.add_flag("--large", large,
               "the scale scenario over 10,000 webhooks, and with 1,000,000 retrying; tenants at "
               "10,000 webhooks");
  bool moonshot = false;
  CLI::Option* moonshotFlag = app.add_flag("--moonshot", moonshot,
               "only the scale scenario, over 100,000 webhooks with 1,000,000 retrying (tens of "
               "minutes, ~10 GB of disk)")
      ->excludes(largeFlag);
  app.add_flag("--smoke", smoke, "tiny sizes, seconds: checks the harness and correctness only")
      ->excludes(moonshotFlag);
  app.add_option("--only", only, "run only these scenarios")
      ->check(CLI::IsMember({"ingest", "slow-clients", "deliver", "end-to-end", "isolation",
                             "scale", "memory", "routed", "noisy-tenant", "fifo", "queues",
                             "cluster", "tenants", "egress", "opens"}));
  app.add_option("--runs", runs, "run everything this many times; report the medians")
      ->check(CLI::Range(1, 9));
  app.add_option("--sync-mode", syncMode, "the daemon's sync mode (full is what the goals mean)")
      ->check(CLI::IsMember({"full", "normal"}));
  app.add_option("--flush-scope", flushScope,
                 "the daemon's flush scope: journal (the node's commit journal written once per "
                 "commit round), file, or filesystem (the data folder's file system flushed once "
                 "per commit round)")
      ->check(CLI::IsMember({"journal", "file", "filesystem"}));
  app.add_option("--out", out, "where to write the JSON results");
  CLI11_PARSE(app, argc, argv);
  // Parts of the daemon run in this process too (the scale scenario's
  // sampler): their info lines are not the bench's output.
  spdlog::set_level(spdlog::level::warn);

  if (moonshot && only.empty()) only = {"scale"};
  BenchConfig config = smoke      ? BenchConfig::smokeSized()
                       : moonshot ? BenchConfig::moonshot()
                       : large    ? BenchConfig::large()
                                  : BenchConfig::normal();
  config.syncMode = syncMode;
  config.flushScope = flushScope;
  config.bodies = generateBodies(smoke ? 16 : 256);
  config.smallBodies = generateBodies(16, 7, {.min = 200, .median = 400, .max = 800});

  const std::vector<std::pair<std::string, std::function<void(const BenchConfig&, Report&)>>> scenarios = {
      {"ingest", runIngest},       {"slow-clients", runSlowClients},
      {"deliver", runDeliver},     {"end-to-end", runEndToEnd},
      {"isolation", runIsolation}, {"scale", runScale},     {"memory", runMemory},
      {"routed", runRouted}, {"noisy-tenant", runNoisyTenant}, {"fifo", runFifo},
      {"queues", runQueues},
      {"cluster", runCluster}, {"tenants", runTenants}, {"egress", runEgress},
      {"opens", runOpens}};
  const auto start = std::chrono::steady_clock::now();
  std::vector<Report> reports;
  for (int i = 1; i <= runs; ++i) {
    Report& report = reports.emplace_back(!smoke);
    for (const auto& [name, run] : scenarios) {
      if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
      const auto begun = std::chrono::steady_clock::now();
      std::cerr << "bench: run " << i << "/" << runs << ": " << name << " ..." << std::flush;
      try {
        run(config, report);
      } catch (const std::exception& e) {
        report.addCheck(name, {std::string("the scenario failed: ") + e.what()});
      }
      std::cerr << " " << std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count()
                << " s\n";
    }
  }
  Report report(!smoke);
  report.addRuns(reports);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.print(std::cout);
  report.writeJson(out, seconds);
  std::cout << "\n" << (report.correct() ? "correct" : "CORRECTNESS VIOLATED") << "; "
            << seconds << " s in all; results in " << out << "\n";
  return report.correct() ? 0 : 1;
}
