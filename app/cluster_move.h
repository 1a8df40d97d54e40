// `webhooker cluster move <webhook> --to NODE`: hands a webhook, its
// configuration and its events DB, from the node that owns it to another,
// while its events keep arriving (docs/scaling.md, *Moving a webhook*):
//
//   1. copy      the events DB to the target in pieces; the source keeps
//                taking events and delivering
//   2. out       the source refuses the webhook's events (503, Retry-After)
//                and waits for its attempts in flight to be recorded
//   3. catch up  the events that arrived, the deliveries that changed
//   4. in        the target takes the configuration and starts delivering
//   5. route     `cluster sync`: HAProxy sends the webhook to the target
//   6. finish    the source deletes its copy; one more sync
//
// The state is on the nodes (the source's moving_to, the target's incoming
// copy or the webhook itself), so running the command again resumes a move
// that stopped, from step 1 before `in` and from step 5 after it;
// `--rollback` gives up a move that has not reached `in`.
#pragma once

#include <string>
#include <vector>

#include "app/cluster_nodes.h"
#include "app/haproxy_runtime.h"
#include "base/result.h"

namespace webhooker::app {

struct MoveRequest {
  std::string webhookId;
  std::string to;
  bool rollback = false;
};

// Prints a line per step. The routes are applied through `sync`.
Result<void> moveWebhook(const std::vector<NodeClient>& nodes, const MoveRequest& request,
                         const std::function<Result<void>()>& sync);

}  // namespace webhooker::app
