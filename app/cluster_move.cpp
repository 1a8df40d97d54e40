#include "app/cluster_move.h"

#include <iostream>
#include <map>

#include "base/uuid.h"

namespace webhooker::app {

namespace {

struct Cursor {
  int64_t afterEvent = 0;
  std::string changedSince;  // "" until the first piece gave the source's time
};

// Copies pieces from `source` to `target` until the source has no more;
// `catchUp` adds the deliveries and attempts that changed since the cursor's
// time. The cursor moves on with each piece.
Result<int> copyEvents(const NodeClient& source, const NodeClient& target,
                       const std::string& webhookId, Cursor& cursor, bool catchUp) {
  const std::string base = "/api/v1/webhooks/" + webhookId + "/move/events";
  int pieces = 0;
  for (bool more = true; more;) {
    std::string query = "?after_event=" + std::to_string(cursor.afterEvent);
    if (catchUp)
      query += "&changed_since=" + cursor.changedSince;
    std::map<std::string, std::string> headers;
    auto piece = source.callRaw("GET", base + query, "", "", &headers);
    if (!piece) return piece.error();
    if (auto merged = target.callRaw("PUT", base, piece.value(), "application/vnd.sqlite3");
        !merged)
      return merged.error();
    ++pieces;
    try {
      cursor.afterEvent = std::stoll(headers.at("X-Transfer-Last-Event"));
      if (cursor.changedSince.empty()) cursor.changedSince = headers.at("X-Transfer-Source-Time");
      more = headers.at("X-Transfer-More") == "true";
    } catch (const std::exception&) {
      return makeError(error_code::kNodeError,
                       "node " + source.node().name +
                           " answered a piece without its cursor: is it the same "
                           "webhooker version?");
    }
  }
  return pieces;
}

const NodeClient* named(const std::vector<NodeClient>& nodes, const std::string& name) {
  for (const NodeClient& n : nodes)
    if (n.node().name == name) return &n;
  return nullptr;
}

}  // namespace

Result<void> moveWebhook(const std::vector<NodeClient>& nodes, const MoveRequest& request,
                         const std::function<Result<void>()>& sync) {
  if (!isUuid(request.webhookId))
    return makeError(error_code::kInvalidArgument, request.webhookId + " is not a webhook id");
  const std::string id = normalizeUuid(request.webhookId);
  const NodeClient* target = named(nodes, request.to);
  if (!target)
    return makeError(error_code::kInvalidArgument, "--to " + request.to + " is not one of --nodes");
  auto placements = readPlacements(nodes);
  if (!placements) return placements.error();

  const NodeClient* source = nullptr;
  bool targetHasIt = false;
  std::optional<std::string> movingTo;
  for (const auto& [name, placement] : placements.value()) {
    const auto it = placement.webhooks.find(id);
    if (it == placement.webhooks.end()) continue;
    if (name == request.to) {
      targetHasIt = true;
      continue;
    }
    if (source)
      return makeError(error_code::kConflict, "webhook " + id + " is on node " +
                                                  source->node().name + " and on node " + name);
    source = named(nodes, name);
    movingTo = it->second.movingTo;
  }
  if (!source && !targetHasIt)
    return makeError(error_code::kNotFound, "webhook " + id + " is on none of the nodes");
  if (!source) {
    if (request.rollback)
      return makeError(error_code::kConflict, "webhook " + id + " is on node " + request.to +
                                                  " and nowhere else: no move to roll back");
    return makeError(error_code::kConflict, "webhook " + id + " is on node " + request.to +
                                                " already");
  }
  if (movingTo && *movingTo != request.to)
    return makeError(error_code::kConflict,
                     "webhook " + id + " is moving to node " + *movingTo + ": finish that move " +
                         "(--to " + *movingTo + ") or roll it back (--to " + *movingTo +
                         " --rollback)");
  if (targetHasIt && !movingTo)
    return makeError(error_code::kConflict, "webhook " + id + " is on node " +
                                                source->node().name + " and on node " + request.to);
  const std::string webhookPath = "/api/v1/webhooks/" + id;

  if (request.rollback && !movingTo) {
    // Stopped before the source stopped taking events: only a copy on the
    // target can be left.
    if (auto r = target->callRaw("DELETE", webhookPath + "/move/in", "", ""); !r) return r.error();
    std::cout << "no move of webhook " << id << " was under way; any copy on node " << request.to
              << " is dropped\n";
    return {};
  }
  if (request.rollback) {
    if (targetHasIt)
      return makeError(error_code::kConflict,
                       "node " + request.to + " has taken the webhook over already and may have "
                       "delivered: finish the move, or move it back with --to " +
                           source->node().name);
    if (auto r = target->callRaw("DELETE", webhookPath + "/move/in", "", ""); !r) return r.error();
    if (auto r = source->call("POST", webhookPath + "/move/back"); !r) return r.error();
    if (auto r = sync(); !r) return r.error();
    std::cout << "rolled back: webhook " << id << " stays on node " << source->node().name << "\n";
    return {};
  }

  Cursor cursor;
  if (!targetHasIt) {
    // 1. The bulk of the events, while the source keeps taking them.
    auto bulk = copyEvents(*source, *target, id, cursor, false);
    if (!bulk) return bulk.error();
    std::cout << "copied " << bulk.value() << " piece(s) of the events to node " << request.to
              << "\n";
    // 2. The source stops taking events and finishes its attempts.
    if (auto r = source->call("POST", webhookPath + "/move/out", nlohmann::json{{"to", request.to}});
        !r)
      return r.error();
    std::cout << "node " << source->node().name << " stopped taking the webhook's events\n";
    // 3. What arrived or changed meanwhile.
    auto caughtUp = copyEvents(*source, *target, id, cursor, true);
    if (!caughtUp) return caughtUp.error();
    // 4. The target takes over.
    auto config = source->callRaw("GET", webhookPath + "/move/config", "", "");
    if (!config) return config.error();
    if (auto r = target->callRaw("POST", webhookPath + "/move/in", config.value(),
                                 "application/json");
        !r)
      return r.error();
    std::cout << "node " << request.to << " took the webhook over\n";
  }
  // 5. The route flips.
  if (auto r = sync(); !r) return r.error();
  // 6. A last look at the source (an event whose commit raced `out` is
  // copied, and the target's engine picks it up), then its copy goes.
  if (!cursor.changedSince.empty()) {
    if (auto last = copyEvents(*source, *target, id, cursor, true); !last) return last.error();
  } else if (auto last = copyEvents(*source, *target, id, cursor, false); !last) {
    return last.error();
  }
  if (auto r = source->callRaw("POST", webhookPath + "/move/finish", "", ""); !r) return r.error();
  if (auto r = sync(); !r) return r.error();
  std::cout << "moved webhook " << id << " from node " << source->node().name << " to node "
            << request.to << "\n";
  return {};
}

}  // namespace webhooker::app
