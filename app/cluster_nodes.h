// The nodes of a cluster as `webhooker cluster ...` sees them: names and
// admin API addresses (--nodes a=http://10.0.0.1:8080,b=...), and what each
// node says it owns (GET /api/v1/placement). Every node takes the same admin
// token (WEBHOOKER_TOKEN here, WEBHOOKER_ADMIN_TOKEN on the nodes).
//
// Errors: "invalid_argument" for a --nodes list that cannot be used,
// "node_unreachable" for a node that did not answer, "node_error" for one
// that answered with an error (its message is carried), "node_mismatch" for
// a node whose --node-id is not the name it was given.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace webhooker::app {

struct ClusterNode {
  std::string name;  // its --node-id
  std::string url;   // http://host:port of its admin API
};

// "a=http://h:1,b=http://h:2": names as --node-id allows them, each once.
Result<std::vector<ClusterNode>> parseNodeList(const std::string& list);

struct PlacedWebhook {
  std::vector<std::string> entrypoints;
  std::optional<std::string> movingTo;  // set while it moves out to that node
};

struct NodePlacement {
  int64_t version = 0;
  std::map<std::string, PlacedWebhook> webhooks;  // by webhook id
};

// One node's admin API, called with the cluster's token.
class NodeClient {
 public:
  NodeClient(ClusterNode node, std::string token);

  const ClusterNode& node() const { return node_; }
  // The JSON answer of a 2xx; an error otherwise (see above).
  Result<nlohmann::json> call(const std::string& method, const std::string& path,
                              const std::optional<nlohmann::json>& body = std::nullopt) const;
  // The same for a body that is not JSON, both ways; the answer's headers
  // come back in `headers`.
  Result<std::string> callRaw(const std::string& method, const std::string& path,
                              const std::string& body, const std::string& contentType,
                              std::map<std::string, std::string>* headers = nullptr) const;
  // GET /api/v1/placement, checked to come from the node of this name.
  Result<NodePlacement> placement() const;
  // GET /readyz: true when the node takes events.
  bool ready() const;
  // Sum of the gauges of that name in /metrics; nullopt when /metrics
  // cannot be read (down, or behind basic auth).
  std::optional<double> gauge(const std::string& name) const;

 private:
  ClusterNode node_;
  std::string token_;
};

// Every node's placement; the first node that fails ends it.
Result<std::map<std::string, NodePlacement>> readPlacements(const std::vector<NodeClient>& nodes);

}  // namespace webhooker::app
