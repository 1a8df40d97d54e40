#include "app/cluster_nodes.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <set>
#include <sstream>

#include "app/admin_client.h"

namespace webhooker::app {

namespace {

constexpr auto kNodeTimeout = std::chrono::seconds(10);

bool validNodeName(const std::string& name) {
  return !name.empty() && name.size() <= 32 &&
         std::all_of(name.begin(), name.end(), [](unsigned char ch) {
           return std::isalnum(ch) || ch == '-' || ch == '_';
         });
}

Result<AdminClient> clientFor(const ClusterNode& node, const std::string& token,
                              std::chrono::seconds timeout = kNodeTimeout) {
  return AdminClient::forUrl(node.url, token, timeout);
}

Error unreachable(const ClusterNode& node, const Error& why) {
  return makeError(error_code::kNodeUnreachable,
                   "node " + node.name + " did not answer: " + why.message);
}

// A node's answer that is not 2xx, as the error it is.
Error refused(const ClusterNode& node, const AdminAnswer& answer) {
  return makeError(error_code::kNodeError, "node " + node.name + ": " + answer.errorText());
}

}  // namespace

Result<std::vector<ClusterNode>> parseNodeList(const std::string& list) {
  std::vector<ClusterNode> nodes;
  std::set<std::string> names;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      return makeError(error_code::kInvalidArgument,
                       "--nodes: \"" + item + "\" is not NAME=URL (e.g. a=http://10.0.0.1:8080)");
    ClusterNode node{item.substr(0, eq), item.substr(eq + 1)};
    while (!node.url.empty() && node.url.back() == '/') node.url.pop_back();
    if (!validNodeName(node.name))
      return makeError(
          error_code::kInvalidArgument,
          "--nodes: \"" + node.name + "\" is not a node id (1 to 32 letters, digits, - or _)");
    if (!node.url.starts_with("http://") || node.url.size() <= 7 ||
        node.url.find('/', 7) != std::string::npos)
      return makeError(error_code::kInvalidArgument,
                       "--nodes: node " + node.name + "'s address must be http://host:port");
    if (!names.insert(node.name).second)
      return makeError(error_code::kInvalidArgument,
                       "--nodes: node " + node.name + " is named twice");
    nodes.push_back(std::move(node));
  }
  if (nodes.empty()) return makeError(error_code::kInvalidArgument, "--nodes: no node given");
  return nodes;
}

NodeClient::NodeClient(ClusterNode node, std::string token)
    : node_(std::move(node)), token_(std::move(token)) {}

Result<nlohmann::json> NodeClient::call(const std::string& method, const std::string& path,
                                        const std::optional<nlohmann::json>& body) const {
  auto client = clientFor(node_, token_);
  if (!client) return client.error();
  const auto answer = client.value().sendJson(method, path, body);
  if (!answer) return unreachable(node_, answer.error());
  if (!answer.value().ok()) return refused(node_, answer.value());
  const nlohmann::json json = answer.value().json();
  return json.is_discarded() ? nlohmann::json::object() : json;
}

Result<std::string> NodeClient::callRaw(const std::string& method, const std::string& path,
                                        const std::string& body, const std::string& contentType,
                                        std::map<std::string, std::string>* headers) const {
  // A piece of an events DB can take a while to read or merge.
  auto client = clientFor(node_, token_, std::chrono::seconds(120));
  if (!client) return client.error();
  auto answer = client.value().send(method, path, body, contentType);
  if (!answer) return unreachable(node_, answer.error());
  if (!answer.value().ok()) return refused(node_, answer.value());
  if (headers) *headers = std::move(answer.value().headers);
  return std::move(answer.value().body);
}

Result<NodePlacement> NodeClient::placement() const {
  auto answer = call("GET", "/api/v1/placement");
  if (!answer) return answer.error();
  const nlohmann::json& a = answer.value();
  if (!a.is_object() || !a.contains("webhooks") || !a["webhooks"].is_array() ||
      !a.contains("version") || !a["version"].is_number_integer())
    return makeError(error_code::kNodeError, "node " + node_.name + " gave no placement: is " +
                                                 node_.url + " a webhooker daemon?");
  const std::string said = a.contains("node_id") && a["node_id"].is_string()
                               ? a["node_id"].get<std::string>()
                               : std::string();
  if (said != node_.name)
    return makeError(
        error_code::kNodeMismatch,
        "the daemon at " + node_.url + " is " +
            (said.empty() ? std::string("not started with --node-id") : "node " + said) +
            ", not node " + node_.name);
  NodePlacement out;
  out.version = a["version"].get<int64_t>();
  for (const nlohmann::json& w : a["webhooks"]) {
    PlacedWebhook& placed = out.webhooks[w.value("id", std::string())];
    placed.entrypoints = w.value("entrypoints", std::vector<std::string>{});
    if (w.contains("moving_to") && w["moving_to"].is_string()) placed.movingTo = w["moving_to"];
  }
  return out;
}

bool NodeClient::ready() const {
  const auto client = clientFor(node_, "", std::chrono::seconds(2));
  if (!client) return false;
  const auto answer = client.value().send("GET", "/readyz");
  return answer && answer.value().status == 200;
}

std::optional<double> NodeClient::gauge(const std::string& name) const {
  const auto client = clientFor(node_, "");
  if (!client) return std::nullopt;
  const auto answer = client.value().send("GET", "/metrics");
  if (!answer || answer.value().status != 200) return std::nullopt;
  double sum = 0;
  std::stringstream lines(answer.value().body);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with(name) || line.size() <= name.size()) continue;
    const char next = line[name.size()];
    if (next != '{' && next != ' ') continue;
    try {
      sum += std::stod(line.substr(line.rfind(' ') + 1));
    } catch (const std::exception&) {
    }
  }
  return sum;
}

Result<std::map<std::string, NodePlacement>> readPlacements(const std::vector<NodeClient>& nodes) {
  std::map<std::string, NodePlacement> out;
  for (const NodeClient& node : nodes) {
    auto placement = node.placement();
    if (!placement) return placement.error();
    out[node.node().name] = std::move(placement.value());
  }
  return out;
}

}  // namespace webhooker::app
