// `webhooker cluster ...`: several nodes that each own whole webhooks,
// behind HAProxy (docs/scaling.md).
//
//   sync            every node's placement → HAProxy's map (file and runtime)
//   create-webhook  on the node with the fewest webhooks (or --node), then sync
//   status          per node: ready, webhooks, backlog
//
// Nodes come from --nodes (WEBHOOKER_CLUSTER_NODES), the token from
// WEBHOOKER_TOKEN, the same on every node. A command that finds a node it
// cannot use (unreachable, another --node-id, a webhook on two nodes)
// changes nothing and exits 1 with one line saying why.
#pragma once

#include <CLI/CLI.hpp>

namespace webhooker::app {

// Adds `cluster` and its subcommands; the exit code of the one that ran
// goes to `exitCode`.
void addClusterCommands(CLI::App& app, int& exitCode);

}  // namespace webhooker::app
