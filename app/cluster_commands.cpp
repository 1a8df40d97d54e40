#include "app/cluster_commands.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/cluster_move.h"
#include "app/cluster_nodes.h"
#include "app/cluster_routes.h"
#include "app/haproxy_runtime.h"

namespace webhooker::app {

namespace {

using nlohmann::json;

struct ClusterSession {
  explicit ClusterSession(int& code) : exitCode(code) {}
  std::string nodes;
  std::string haproxySocket;
  std::string mapFile;
  std::string node;  // create-webhook --node
  std::string webhookId;  // move
  std::string to;
  bool rollback = false;
  std::string name;
  std::string description;
  bool rawJson = false;
  int& exitCode;
};

void reportError(const Error& error) { std::cerr << "webhooker: " << error.message << "\n"; }

std::string statusCell(const json& value) {
  if (value.is_null()) return "-";
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// One column per key, headed by the key in capitals; a missing value is "-".
void printTable(const std::vector<std::string>& keys, const json& rows) {
  std::vector<std::vector<std::string>> lines(1);
  for (const std::string& key : keys) {
    std::string& header = lines[0].emplace_back(key);
    std::transform(header.begin(), header.end(), header.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  }
  for (const json& row : rows) {
    std::vector<std::string>& line = lines.emplace_back();
    for (const std::string& key : keys) line.push_back(statusCell(row.value(key, json())));
  }
  std::vector<size_t> widths(keys.size(), 0);
  for (const auto& line : lines)
    for (size_t i = 0; i < line.size(); ++i) widths[i] = std::max(widths[i], line[i].size());
  for (const auto& line : lines) {
    std::string text;
    for (size_t i = 0; i < line.size(); ++i)
      text += line[i] + (i + 1 < line.size() ? std::string(widths[i] - line[i].size() + 2, ' ')
                                             : std::string());
    std::cout << text << "\n";
  }
}

void printStatusTable(const json& rows) {
  printTable({"node", "url", "ready", "webhooks", "pending", "retrying", "version"}, rows);
  for (const json& row : rows)
    if (row.contains("error")) std::cout << "node " << statusCell(row["node"]) << ": " << statusCell(row["error"]) << "\n";
}

// The nodes with the token, or nullopt after saying why not.
std::optional<std::vector<NodeClient>> connectNodes(const ClusterSession& s) {
  const char* token = std::getenv("WEBHOOKER_TOKEN");
  if (!token || !*token) {
    std::cerr << "webhooker: WEBHOOKER_TOKEN is not set: the admin token every node of the "
                 "cluster shares (their WEBHOOKER_ADMIN_TOKEN)\n";
    return std::nullopt;
  }
  auto parsed = parseNodeList(s.nodes);
  if (!parsed) {
    reportError(parsed.error());
    return std::nullopt;
  }
  std::vector<NodeClient> clients;
  for (ClusterNode& node : parsed.value()) clients.emplace_back(std::move(node), token);
  return clients;
}

// Reads every placement and applies the routes; prints what it did.
bool applyRoutes(const ClusterSession& s, const std::vector<NodeClient>& nodes, bool quiet = false) {
  auto placements = readPlacements(nodes);
  if (!placements) {
    reportError(placements.error());
    return false;
  }
  auto routes = buildRoutes(placements.value());
  if (!routes) {
    reportError(routes.error());
    return false;
  }
  HaproxyRuntime haproxy(s.haproxySocket);
  if (auto applied = haproxy.replaceMap(s.mapFile, routes.value()); !applied) {
    reportError(applied.error());
    return false;
  }
  if (quiet) return true;
  std::cout << "synced " << routes->size() << " routes from " << nodes.size() << " nodes\n";
  return true;
}

void runSync(ClusterSession& s) {
  s.exitCode = 1;
  const auto nodes = connectNodes(s);
  if (nodes && applyRoutes(s, *nodes)) s.exitCode = 0;
}

void runCreateWebhook(ClusterSession& s) {
  s.exitCode = 1;
  const auto nodes = connectNodes(s);
  if (!nodes) return;
  auto placements = readPlacements(*nodes);
  if (!placements) return reportError(placements.error());
  auto chosen = chooseNode(*nodes, placements.value(), s.node);
  if (!chosen) return reportError(chosen.error());
  json body = {{"name", s.name}};
  if (!s.description.empty()) body["description"] = s.description;
  auto created = chosen.value()->call("POST", "/api/v1/webhooks", body);
  if (!created) return reportError(created.error());
  if (!applyRoutes(s, *nodes, s.rawJson)) {
    std::cerr << "webhooker: the webhook was created on node " << chosen.value()->node().name
              << " but is not routed yet; run `webhooker cluster sync`\n";
    return;
  }
  created.value()["node"] = chosen.value()->node().name;
  if (s.rawJson) {
    std::cout << created->dump() << "\n";
  } else {
    std::cout << "created webhook " << created->value("id", std::string()) << " on node "
              << chosen.value()->node().name << "\n";
    // Routed by now: senders can be given it.
    for (const json& entrypoint : created->value("entrypoints", json::array()))
      std::cout << "entrypoint " << entrypoint.value("id", std::string()) << ": POST /hooks/"
                << entrypoint.value("id", std::string()) << "\n";
  }
  s.exitCode = 0;
}

// Every node's webhooks, with the node that holds each; a node that does
// not answer fails the command (a list without it would look whole).
void runListWebhooks(ClusterSession& s) {
  s.exitCode = 1;
  const auto nodes = connectNodes(s);
  if (!nodes) return;
  json rows = json::array();
  for (const NodeClient& node : *nodes) {
    // Every page of the node's list, by its cursor (URL-safe as given).
    std::string next;
    do {
      auto listed = node.call(
          "GET", "/api/v1/webhooks?limit=500" + (next.empty() ? "" : "&cursor=" + next));
      if (!listed) return reportError(listed.error());
      for (json webhook : listed->value("webhooks", json::array())) {
        webhook["node"] = node.node().name;
        rows.push_back(std::move(webhook));
      }
      const json cursor = listed->value("next_cursor", json());
      next = cursor.is_string() ? cursor.get<std::string>() : std::string();
    } while (!next.empty());
  }
  if (s.rawJson) {
    std::cout << json{{"webhooks", rows}}.dump() << "\n";
  } else {
    json table = json::array();
    for (const json& webhook : rows) {
      std::string entrypoints;
      for (const json& entrypoint : webhook.value("entrypoints", json::array()))
        entrypoints += (entrypoints.empty() ? "" : ",") + entrypoint.value("id", std::string());
      table.push_back({{"node", webhook["node"]},
                       {"id", webhook.value("id", json())},
                       {"name", webhook.value("name", json())},
                       {"entrypoints", entrypoints}});
    }
    printTable({"node", "id", "name", "entrypoints"}, table);
  }
  s.exitCode = 0;
}

void runMove(ClusterSession& s) {
  s.exitCode = 1;
  const auto nodes = connectNodes(s);
  if (!nodes) return;
  const auto syncRoutes = [&]() -> Result<void> {
    if (!applyRoutes(s, *nodes))
      return makeError(error_code::kSyncFailed, "the routes were not applied");
    return {};
  };
  if (auto moved = moveWebhook(*nodes, {s.webhookId, s.to, s.rollback}, syncRoutes); !moved) {
    if (moved.error().code != error_code::kSyncFailed) reportError(moved.error());
    std::cerr << "webhooker: run the same command again to resume"
              << (s.rollback ? "" : " (or add --rollback to give the move up)") << "\n";
    return;
  }
  s.exitCode = 0;
}

void runStatus(ClusterSession& s) {
  s.exitCode = 1;
  const auto nodes = connectNodes(s);
  if (!nodes) return;
  json rows = json::array();
  bool allReady = true;
  for (const NodeClient& node : *nodes) {
    json row = {{"node", node.node().name}, {"url", node.node().url}, {"ready", node.ready()}};
    if (auto placement = node.placement()) {
      row["webhooks"] = placement->webhooks.size();
      row["version"] = placement->version;
    } else {
      row["webhooks"] = nullptr;
      row["version"] = nullptr;
      row["error"] = placement.error().message;
    }
    for (const char* gauge : {"pending", "retrying"}) {
      const auto value = node.gauge(std::string("webhooker_deliveries_") + gauge);
      row[gauge] = value ? json(static_cast<int64_t>(*value)) : json(nullptr);
    }
    allReady = allReady && row["ready"].get<bool>() && !row.contains("error");
    rows.push_back(row);
  }
  if (s.rawJson) {
    std::cout << json{{"nodes", rows}}.dump() << "\n";
  } else {
    printStatusTable(rows);
  }
  // A node that is down is not a failure of the command, but scripts want
  // to know: exit 3, as a monitoring check would.
  s.exitCode = allReady ? 0 : 3;
}

}  // namespace

void addClusterCommands(CLI::App& app, int& exitCode) {
  auto s = std::make_shared<ClusterSession>(exitCode);
  CLI::App* cluster = app.add_subcommand(
      "cluster", "several nodes behind HAProxy: routes, placement of webhooks, status");
  cluster->require_subcommand(1);
  const auto nodesOption = [&s](CLI::App* command) {
    command->add_option("--nodes", s->nodes, "the nodes, as NAME=http://host:port,...")
        ->envname("WEBHOOKER_CLUSTER_NODES")
        ->required();
  };
  const auto haproxyOptions = [&s](CLI::App* command) {
    command->add_option("--haproxy-socket", s->haproxySocket,
                        "HAProxy's admin socket (stats socket PATH level admin)")
        ->envname("WEBHOOKER_HAPROXY_SOCKET")
        ->required();
    command->add_option("--map", s->mapFile,
                        "the map file HAProxy's configuration loads (rewritten whole)")
        ->envname("WEBHOOKER_HAPROXY_MAP")
        ->required();
  };

  CLI::App* syncCommand = cluster->add_subcommand(
      "sync", "route every node's webhooks and entrypoints in HAProxy (its map file and the "
              "running process)");
  nodesOption(syncCommand);
  haproxyOptions(syncCommand);
  syncCommand->callback([s] { runSync(*s); });

  CLI::App* create = cluster->add_subcommand(
      "create-webhook", "create a webhook on the node with the fewest webhooks, then sync");
  nodesOption(create);
  haproxyOptions(create);
  create->add_option("--name", s->name, "the webhook's name")->required();
  create->add_option("--description", s->description, "the webhook's description");
  create->add_option("--node", s->node, "create it on this node instead");
  create->add_flag("--json", s->rawJson, "print the node's answer as JSON");
  create->callback([s] { runCreateWebhook(*s); });

  CLI::App* list = cluster->add_subcommand(
      "list-webhooks", "every node's webhooks, with the node that holds each and its entrypoints");
  nodesOption(list);
  list->add_flag("--json", s->rawJson, "print JSON");
  list->callback([s] { runListWebhooks(*s); });

  CLI::App* move = cluster->add_subcommand(
      "move", "move a webhook, its settings and events, to another node while its events keep "
              "arriving; run again to resume a move that stopped");
  move->add_option("WEBHOOK", s->webhookId, "the webhook's id")->required();
  move->add_option("--to", s->to, "the node to move it to")->required();
  move->add_flag("--rollback", s->rollback,
                 "give up a move that stopped before the node it went to took it over");
  nodesOption(move);
  haproxyOptions(move);
  move->callback([s] { runMove(*s); });

  CLI::App* status = cluster->add_subcommand(
      "status", "per node: ready (/readyz), webhooks, pending and retrying deliveries; exit 3 "
                "if a node is not ready");
  nodesOption(status);
  status->add_flag("--json", s->rawJson, "print JSON");
  status->callback([s] { runStatus(*s); });
}

}  // namespace webhooker::app
