// cluster: ingest through HAProxy in front of 1, 2 and 3 nodes, each node
// owning one webhook (routed by `webhooker cluster sync`), against one node
// without HAProxy, all in the same run. Every node and HAProxy share this
// machine's cores, so more nodes cannot add capacity here: the ratios say
// what a node keeps of its rate behind HAProxy and beside other nodes
// (per-node efficiency), not how far a cluster of machines scales.
// The total load (events, connections) is the same in every variant and
// split evenly over the nodes' webhooks; each node's deliveries go to its own
// receiver, and each node's data folder gets the correctness check.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/load_generator.h"
#include "bench/receiver.h"
#include "bench/scenario_support.h"
#include "bench/scenarios.h"
#include "tests/support/haproxy_process.h"

namespace webhooker::bench {

namespace {

struct Node {
  testing::TempDir data;
  std::unique_ptr<BenchDaemon> daemon;
  std::unique_ptr<BenchReceiver> receiver;
  CreatedWebhook webhook;
  std::string target;
  LoadResult load;
};

// Events/s through HAProxy with `count` nodes.
double throughHaproxy(const BenchConfig& config, int count, Report& report) {
  std::vector<std::unique_ptr<Node>> nodes;
  std::map<std::string, int> ports;
  std::string nodeList;
  for (int i = 0; i < count; ++i) {
    auto& node = nodes.emplace_back(std::make_unique<Node>());
    const std::string name = "n" + std::to_string(i + 1);
    node->daemon = std::make_unique<BenchDaemon>(node->data.path(),
                                                 config.daemonSettings({"--node-id", name}));
    node->receiver = std::make_unique<BenchReceiver>();
    node->webhook = node->daemon->createWebhook("cluster-" + name);
    node->target = node->daemon->createHttpTarget(node->webhook.id, node->receiver->url(),
                                                  config.workers);
    ports[name] = portOf(node->daemon->url());
    nodeList += (nodeList.empty() ? "" : ",") + name + "=" + node->daemon->url();
  }
  testing::HaproxyProcess haproxy(ports);
  const testing::CommandResult synced = testing::runCommand(
      {testing::webhookerBin(), "cluster", "sync", "--nodes", nodeList, "--haproxy-socket",
       haproxy.socket().string(), "--map", haproxy.map().string()},
      {std::string("WEBHOOKER_TOKEN=") + kAdminToken});
  if (synced.exitCode != 0) throw std::runtime_error("cluster sync failed: " + synced.err);

  std::vector<std::thread> senders;
  for (auto& node : nodes) {
    LoadSpec spec;
    spec.baseUrl = haproxy.url();
    spec.path = node->webhook.hookPath;
    spec.connections = std::max(1, config.connections / count);
    spec.requests = config.ingestEvents / static_cast<size_t>(count);
    spec.firstSeq = reserveSeqs(spec.requests);
    senders.emplace_back([&config, spec, n = node.get()] { n->load = runLoad(spec, config.bodies); });
  }
  for (auto& s : senders) s.join();

  size_t ok = 0;
  double seconds = 0;
  for (auto& node : nodes) {
    ok += node->load.ok();
    seconds = std::max(seconds, node->load.seconds);
    const bool delivered = node->receiver->waitForCount(node->load.ok(), config.drainCap);
    node->daemon->stop();
    const WebhookExpectation expectation{node->webhook.id, {node->target},
                                         node->load.acceptedSeqs()};
    addCheckAfterWait(report, "cluster-" + std::to_string(count), config, delivered,
                      {node->data.path(), {expectation}, {{node->target, node->receiver.get()}},
                       {node->target}, {}});
  }
  return seconds > 0 ? static_cast<double>(ok) / seconds : 0;
}

}  // namespace

void runCluster(const BenchConfig& config, Report& report) {
  if (!testing::haproxyBin()) {
    std::fprintf(stderr, "cluster: haproxy is not installed; skipped\n");
    return;
  }
  LoadSpec spec;
  spec.connections = config.connections;
  spec.requests = config.ingestEvents;
  BenchReceiver receiver;
  const LoadResult alone =
      loadThroughDaemon(config, spec, LoadTarget::http(receiver), "cluster-alone", report);
  for (int count = 1; count <= 3; ++count)
    report.add({"cluster", "events/s through HAProxy, " + std::to_string(count) + " node(s)",
                throughHaproxy(config, count, report), "1/s", alone.ratePerSecond(),
                "one node, no HAProxy", std::nullopt});
}

}  // namespace webhooker::bench
