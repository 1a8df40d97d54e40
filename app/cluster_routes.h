// What HAProxy routes, worked out from every node's placement: each
// entrypoint id (ingest: /hooks/<id>) and each webhook id (admin API:
// /api/v1/webhooks/<id>/...) → the backend of the node that owns it,
// `node_<name>` (docs/scaling.md shows the HAProxy configuration).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "app/cluster_nodes.h"
#include "app/haproxy_runtime.h"
#include "base/result.h"

namespace webhooker::app {

std::string backendOf(const std::string& nodeName);

// Sorted by key. "conflict" when a webhook or an entrypoint is on two nodes.
Result<MapEntries> buildRoutes(const std::map<std::string, NodePlacement>& placements);

// The node `wanted` names, or (wanted empty) the one with the fewest
// webhooks, the first listed on a tie. "invalid_argument" for a name that
// is not among the nodes.
Result<const NodeClient*> chooseNode(const std::vector<NodeClient>& nodes,
                                     const std::map<std::string, NodePlacement>& placements,
                                     const std::string& wanted);

}  // namespace webhooker::app
