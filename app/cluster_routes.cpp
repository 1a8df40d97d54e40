#include "app/cluster_routes.h"

namespace webhooker::app {

std::string backendOf(const std::string& nodeName) { return "node_" + nodeName; }

Result<MapEntries> buildRoutes(const std::map<std::string, NodePlacement>& placements) {
  // A webhook half-way through a move is on both nodes once the node it
  // moves to has taken over: the one it moves out of is skipped.
  const auto movedAway = [&placements](const std::string& webhookId, const std::string& node) {
    const auto& webhooks = placements.at(node).webhooks;
    const auto it = webhooks.find(webhookId);
    if (it == webhooks.end() || !it->second.movingTo) return false;
    const auto target = placements.find(*it->second.movingTo);
    return target != placements.end() && target->second.webhooks.count(webhookId) > 0;
  };
  std::map<std::string, std::string> owners;  // key → node
  const auto route = [&owners](const std::string& key, const std::string& node,
                               const char* what) -> Result<void> {
    auto [it, added] = owners.emplace(key, node);
    if (!added && it->second != node)
      return makeError(error_code::kConflict,
                       std::string(what) + " " + key + " is on node " + it->second +
                           " and on node " + node + "; nothing was changed");
    return {};
  };
  for (const auto& [node, placement] : placements) {
    for (const auto& [webhookId, placed] : placement.webhooks) {
      if (movedAway(webhookId, node)) continue;
      if (auto r = route(webhookId, node, "webhook"); !r) return r.error();
      for (const std::string& entrypoint : placed.entrypoints)
        if (auto r = route(entrypoint, node, "entrypoint"); !r) return r.error();
    }
  }
  MapEntries entries;
  entries.reserve(owners.size());
  for (const auto& [key, node] : owners) entries.emplace_back(key, backendOf(node));
  return entries;
}

Result<const NodeClient*> chooseNode(const std::vector<NodeClient>& nodes,
                                     const std::map<std::string, NodePlacement>& placements,
                                     const std::string& wanted) {
  const NodeClient* chosen = nullptr;
  for (const NodeClient& node : nodes) {
    const std::string& name = node.node().name;
    if (!wanted.empty()) {
      if (name == wanted) return &node;
      continue;
    }
    const auto count = [&placements](const NodeClient& n) {
      return placements.at(n.node().name).webhooks.size();
    };
    if (!chosen || count(node) < count(*chosen)) chosen = &node;
  }
  if (!chosen)
    return makeError(error_code::kInvalidArgument, "--node " + wanted + " is not one of --nodes");
  return chosen;
}

}  // namespace webhooker::app
