#include "bench/scenarios.h"

namespace webhooker::bench {

DaemonSettings BenchConfig::daemonSettings(std::vector<std::string> extraArgs) const {
  DaemonSettings s;
  s.syncMode = syncMode;
  s.flushScope = flushScope;
  s.httpThreads = connections;
  s.workers = workers;
  s.maxWorkers = maxWorkers;
  s.extraArgs = std::move(extraArgs);
  return s;
}

BenchConfig BenchConfig::normal() { return {}; }

BenchConfig BenchConfig::large() {
  BenchConfig c;
  c.scaleShapes = {{10'000, 100'000}, {1'000, 1'000'000, 10}};
  c.tenants = 10'000;
  // 4 a webhook: WALs that only grow (150 a webhook would take ~25 min).
  c.tenantEvents = 40'000;
  c.openFiles = 2'000;
  return c;
}

BenchConfig BenchConfig::moonshot() {
  BenchConfig c;
  c.scaleShapes = {{100'000, 1'000'000, 30, 1'000, 500, true}};
  return c;
}

BenchConfig BenchConfig::smokeSized() {
  BenchConfig c;
  c.smoke = true;
  c.ingestEvents = 200;
  c.ingestConnections = {8};
  c.ingestAloneConnections = 8;
  c.floodConnections = 4;  // fewer than the bare server's threads: seconds, not a stall
  c.floodRate = 100;
  c.floodSeconds = 1;
  c.deliverBacklog = 200;
  c.deliverTenants = 10;
  c.endToEndRate = 200;
  c.endToEndSeconds = 1;
  c.isolationEvents = 100;
  // The moonshot's seeding (a copied template) checked too, at a tiny size.
  c.scaleShapes = {{10, 100}, {12, 120, 5, 100, 300, true}};
  c.memoryWebhooks = 2;
  c.memoryTargets = 3;
  c.memoryEvents = 50;
  c.fifoEvents = 40;
  c.queueEvents = 40;
  c.tenants = 20;
  c.tenantEvents = 200;
  return c;
}

}  // namespace webhooker::bench
