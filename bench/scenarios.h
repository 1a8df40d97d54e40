// The benchmark scenarios of the speed issue. Each measures the real daemon
// and its baseline in the same run, adds its figures to the report and ends
// with the correctness check. Sizes come from BenchConfig (normal, --large,
// --smoke).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/daemon.h"
#include "bench/report.h"

namespace webhooker::bench {

struct BenchConfig {
  bool smoke = false;
  int connections = 8;  // load generator connections = the daemon's HTTP threads
  int workers = 8;      // the daemon's delivery workers = the bare client loop's connections
  // The most it starts while every worker is busy: a receiver shared by many
  // targets may see this many connections.
  int maxWorkers = 64;
  std::string syncMode = "full";  // the daemon's; "normal" shows what the fsyncs cost
  std::string flushScope = "journal";  // the daemon's --flush-scope
  // How long a scenario waits for its deliveries to finish. A slower product
  // is measured on what arrived by then, and its correctness check reports
  // every delivery that did not finish.
  std::chrono::seconds drainCap{60};
  size_t ingestEvents = 10'000;          // at each of ingestConnections
  std::vector<int> ingestConnections = {8, 64, 256};
  // Where the same load also goes to a webhook without targets (the issue's
  // goal is at 64 connections).
  int ingestAloneConnections = 64;
  // slow-client flood: attacker connections held open (trickled heads and
  // idle keep-alive; half as many bodies sent up front then silence; a
  // twentieth as many huge chunk extensions) while a good client posts at
  // floodRate for floodSeconds.
  int floodConnections = 2'000;
  double floodRate = 500;
  double floodSeconds = 20;
  size_t deliverBacklog = 50'000;  // deliveries, to one target and fanned out
  int deliverFanOut = 4;           // targets of one webhook, each with its own receiver
  int deliverTenants = 1'000;      // webhooks with one target each, one shared receiver
  // Events of each of those webhooks (20,000 deliveries in all): enough for
  // a steady rate, and seeding a thousand events DBs is slow.
  size_t deliverTenantEvents = 20;
  double endToEndRate = 1'000;
  double endToEndSeconds = 10;
  size_t isolationEvents = 20'000;
  // The scale scenario's backlogs: so many retrying deliveries over so many
  // webhooks, one run each, with the goals they are judged by.
  struct ScaleShape {
    int webhooks;
    size_t retrying;
    double recoveryGoalS = 5;
    double samplerGoalMs = 100;
    double rssGoalMb = 300;
    // Seed one webhook's events DB and copy it for the others (new ids, its
    // own target and sequence numbers in each): 100,000 files made one by
    // one through the storage layer would take longer than the run.
    bool copyTemplate = false;
  };
  std::vector<ScaleShape> scaleShapes = {{1'000, 100'000}};
  // memoryWebhooks x memoryTargets x memoryEvents pending deliveries: a
  // wide outage (1,000 targets down) over 10,000 realistic events.
  int memoryWebhooks = 10;
  int memoryTargets = 100;
  size_t memoryEvents = 1'000;
  // tenants: webhooks made through the API, and the ingest load (at
  // ingestAloneConnections) spread over them at random. 150 events a
  // webhook: a one-event commit appends ~8 WAL frames, so most webhooks'
  // WALs reach SQLite's checkpoint (1,000 frames) during the load, as a
  // node's do all day; a shorter load measures WALs that only grow.
  int tenants = 1'000;
  size_t tenantEvents = 150'000;
  // opens: closed events DBs opened one after another, each way.
  int openFiles = 300;
  // fifo: events drained to a receiver answering in 1 ms (a quarter of them
  // for the one answering in 10 ms).
  size_t fifoEvents = 1'000;
  // queues: events seeded for each queue target, and published by its bare loop.
  size_t queueEvents = 10'000;
  std::vector<std::string> bodies;       // realistic: 2–30 KB, median ~8 KB
  std::vector<std::string> smallBodies;  // for backlogs whose bodies are never read (scale)

  DaemonSettings daemonSettings(std::vector<std::string> extraArgs = {}) const;

  static BenchConfig normal();
  static BenchConfig large();
  // The scale scenario alone at 100,000 webhooks with 1,000,000 retrying.
  static BenchConfig moonshot();
  static BenchConfig smokeSized();
};

void runIngest(const BenchConfig& config, Report& report);
void runDeliver(const BenchConfig& config, Report& report);
void runQueues(const BenchConfig& config, Report& report);
void runRouted(const BenchConfig& config, Report& report);
void runEndToEnd(const BenchConfig& config, Report& report);
void runIsolation(const BenchConfig& config, Report& report);
void runScale(const BenchConfig& config, Report& report);
void runMemory(const BenchConfig& config, Report& report);
void runFifo(const BenchConfig& config, Report& report);
void runSlowClients(const BenchConfig& config, Report& report);
void runCluster(const BenchConfig& config, Report& report);
void runTenants(const BenchConfig& config, Report& report);
void runNoisyTenant(const BenchConfig& config, Report& report);
void runEgress(const BenchConfig& config, Report& report);
void runOpens(const BenchConfig& config, Report& report);

}  // namespace webhooker::bench
