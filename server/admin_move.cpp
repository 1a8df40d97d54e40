#include "server/admin_move.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "base/time_format.h"
#include "server/admin_api.h"
#include "server/json_io.h"
#include "storage/webhook_transfer.h"

namespace webhooker::server {

namespace {

using namespace std::chrono_literals;

// How long `out` waits for the attempts in flight (an attempt's own timeout
// is 30 s at most); past it the command says so and can be run again.
constexpr auto kQuiesceTimeout = 40s;
// A catch-up copies every delivery changed at or after the first piece's
// time less this, so a change written with an earlier time but committed
// after that piece was read is not missed (merging a row twice is harmless).
constexpr auto kClockMargin = 60s;

std::optional<int64_t> integerParam(const HttpRequest& req, const char* name) {
  const auto it = req.params.find(name);
  if (it == req.params.end()) return int64_t{0};
  try {
    size_t used = 0;
    const int64_t value = std::stoll(it->second, &used);
    if (used != it->second.size() || value < 0) return std::nullopt;
    return value;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

MoveApi::MoveApi(MainStore& store, EventsDbPool& eventsDbs, Dispatcher& dispatcher,
                 MoveFence& moveFence, DbOptions options, std::string nodeId)
    : store_(store),
      eventsDbs_(eventsDbs),
      dispatcher_(dispatcher),
      moveFence_(moveFence),
      options_(options),
      nodeId_(std::move(nodeId)) {}

void MoveApi::registerRoutes(Router& router) {
  const std::string move = "/api/v1/webhooks/{id}/move";
  const auto bind = [this](void (MoveApi::*handler)(const HttpRequest&, HttpResponse&)) {
    return [this, handler](const HttpRequest& req, HttpResponse& res) {
      if (nodeId_.empty())
        return sendError(res, 409, error_code::kNotInCluster,
                         "this daemon was started without --node-id: it takes part in no move");
      (this->*handler)(req, res);
    };
  };
  router.add("GET", move + "/events", bind(&MoveApi::readEvents));
  router.add("PUT", move + "/events", bind(&MoveApi::mergeEvents), kPieceLimit);
  router.add("POST", move + "/out", bind(&MoveApi::moveOut));
  router.add("POST", move + "/back", bind(&MoveApi::moveBack));
  router.add("GET", move + "/config", bind(&MoveApi::config));
  router.add("POST", move + "/finish", bind(&MoveApi::finish));
  router.add("POST", move + "/in", bind(&MoveApi::moveIn));
  router.add("DELETE", move + "/in", bind(&MoveApi::dropIncoming));
}

std::filesystem::path MoveApi::dataDir() const { return eventsDbs_.pathFor("x").parent_path(); }

std::filesystem::path MoveApi::incomingPath(const std::string& webhookId) const {
  return dataDir() / ("incoming-" + webhookId + ".db");
}

void MoveApi::readEvents(const HttpRequest& req, HttpResponse& res) {
  auto id = pathId(req, res, 1, "webhook");
  if (!id) return;
  if (auto w = store_.getWebhook(*id); !w) return sendError(res, w.error());
  TransferCursor cursor;
  const auto afterEvent = integerParam(req, "after_event");
  if (!afterEvent)
    return sendError(res, 400, error_code::kInvalidParameter,
                     "after_event is a whole number from 0");
  cursor.afterEvent = *afterEvent;
  if (const auto since = req.params.find("changed_since"); since != req.params.end()) {
    if (!parseTime(since->second))
      return sendError(res, 400, error_code::kInvalidParameter,
                       "changed_since is an ISO-8601 time");
    cursor.changedSince = since->second;
  }
  auto piece = readTransferPiece(eventsDbs_.pathFor(*id), dataDir(), cursor, kPieceBodyBudget,
                                 options_, formatTime(std::chrono::system_clock::now() - kClockMargin));
  if (!piece) return sendError(res, piece.error());
  res.set_header("X-Transfer-Last-Event", std::to_string(piece->lastEvent));
  res.set_header("X-Transfer-More", piece->more ? "true" : "false");
  res.set_header("X-Transfer-Source-Time", piece->sourceTime);
  res.set_content(std::move(piece->bytes), "application/vnd.sqlite3");
}

void MoveApi::targetsChanged(const std::string& webhookId) {
  auto targets = store_.listTargets(webhookId);
  if (!targets) return;
  for (const TargetRecord& t : targets.value()) dispatcher_.targetChanged(webhookId, t.id);
}

bool MoveApi::quiesce(const std::string& webhookId) {
  const auto deadline = std::chrono::steady_clock::now() + kQuiesceTimeout;
  // The ingests that may have read "not moving" are stored (or refused).
  if (!moveFence_.waitForIngests(deadline)) return false;
  auto targets = store_.listTargets(webhookId);
  if (!targets) return false;
  auto db = eventsDbs_.getIfMade(webhookId);
  if (!db) return false;
  int quietChecks = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    bool quiet = !db.value() || db.value()->writesWaiting() == 0;
    for (const TargetRecord& t : targets.value())
      quiet = quiet && dispatcher_.attemptsInFlight(t.id) == 0;
    // Twice in a row: an attempt that ended between the two reads has
    // queued its result by the second.
    quietChecks = quiet ? quietChecks + 1 : 0;
    if (quietChecks == 2) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

void MoveApi::moveOut(const HttpRequest& req, HttpResponse& res) {
  auto id = pathId(req, res, 1, "webhook");
  if (!id) return;
  auto body = parseJsonObject(req, res);
  if (!body) return;
  if (!body->contains("to") || !(*body)["to"].is_string() || (*body)["to"].get<std::string>().empty())
    return sendError(res, 400, error_code::kInvalidField,
                     "\"to\" must name the node the webhook moves to");
  const std::string to = (*body)["to"];
  if (to == nodeId_)
    return sendError(res, 409, error_code::kConflict,
                     "the webhook is on node " + nodeId_ + " already");
  auto webhook = store_.getWebhook(*id);
  if (!webhook) return sendError(res, webhook.error());
  if (webhook->movingTo && *webhook->movingTo != to)
    return sendError(res, 409, error_code::kConflict,
                     "the webhook is moving to node " + *webhook->movingTo + ", not " + to);
  if (!webhook->movingTo) {
    if (auto r = moveFence_.startMove(*id, to); !r) return sendError(res, r.error());
    targetsChanged(*id);
    spdlog::info("move.out webhook_id={} to={}", *id, to);
  }
  if (!quiesce(*id))
    return sendError(res, 503, error_code::kAttemptsInFlight,
                     "the webhook's attempts in flight did not end in time; run the move again");
  sendJson(res, 200, {{"id", *id}, {"moving_to", to}});
}

void MoveApi::moveBack(const HttpRequest& req, HttpResponse& res) {
  auto id = pathId(req, res, 1, "webhook");
  if (!id) return;
  auto webhook = store_.getWebhook(*id);
  if (!webhook) return sendError(res, webhook.error());
  if (webhook->movingTo) {
    if (auto r = store_.setWebhookMovingTo(*id, std::nullopt); !r) return sendError(res, r.error());
    targetsChanged(*id);
    spdlog::info("move.back webhook_id={}", *id);
  }
  sendJson(res, 200, {{"id", *id}, {"moving_to", nullptr}});
}

std::optional<Webhook> MoveApi::movingOut(const HttpRequest& req, HttpResponse& res) {
  auto id = pathId(req, res, 1, "webhook");
  if (!id) return std::nullopt;
  auto webhook = store_.getWebhook(*id);
  if (!webhook) {
    sendError(res, webhook.error());
    return std::nullopt;
  }
  if (!webhook->movingTo) {
    sendError(res, 409, error_code::kConflict, "the webhook is not moving out of this node");
    return std::nullopt;
  }
  return std::move(webhook.value());
}

void MoveApi::config(const HttpRequest& req, HttpResponse& res) {
  const auto webhook = movingOut(req, res);
  if (!webhook) return;
  auto rows = store_.webhookRows(webhook->id);
  if (!rows) return sendError(res, rows.error());
  res.set_content(std::move(rows.value()), "application/json");
}

void MoveApi::finish(const HttpRequest& req, HttpResponse& res) {
  const auto webhook = movingOut(req, res);
  if (!webhook) return;
  if (auto r = deleteWebhookWithEvents(store_, eventsDbs_, webhook->id); !r)
    return sendError(res, r.error());
  spdlog::info("move.finished webhook_id={} to={}", webhook->id, *webhook->movingTo);
  res.status = 204;
}

void MoveApi::mergeEvents(const HttpRequest& req, HttpResponse& res) {
  auto id = pathId(req, res, 1, "webhook");
  if (!id) return;
  auto webhook = store_.getWebhook(*id);
  if (!webhook && !webhook.error().isNotFound()) return sendError(res, webhook.error());
  if (webhook && webhook->movingTo)
    return sendError(res, 409, error_code::kConflict, "the webhook is moving out of this node");
  // Before it takes over, into the incoming copy; after, into its events DB
  // as the pool writes it (a late piece of a resumed move), whose new
  // deliveries the engine picks up.
  const auto merged =
      webhook ? mergeTransferPiece(eventsDbs_, *id, req.body, DeliveryMerge::kAddMissing)
              : mergeTransferPiece(incomingPath(*id), dataDir(), req.body,
                                   DeliveryMerge::kNewerWins, options_);
  if (!merged) return sendError(res, merged.error());
  if (webhook) targetsChanged(*id);
  sendJson(res, 200, {{"id", *id}, {"merged", true}});
}

void MoveApi::moveIn(const HttpRequest& req, HttpResponse& res) {
  auto id = pathId(req, res, 1, "webhook");
  if (!id) return;
  if (auto existing = store_.getWebhook(*id); existing)
    return sendError(res, 409, error_code::kConflict, "the webhook is on this node already");
  if (!std::filesystem::exists(incomingPath(*id)))
    return sendError(res, 409, error_code::kConflict, "no events of this webhook were copied here");
  if (auto r = store_.importWebhookRows(*id, req.body); !r) return sendError(res, r.error());
  const auto adopt = [&](const std::filesystem::path& file) {
    return adoptIncoming(incomingPath(*id), file, options_);
  };
  if (auto adopted = eventsDbs_.install(*id, adopt); !adopted) {
    // Not taken over: the rows go again, the copy stays for the next try.
    (void)store_.deleteWebhook(*id);
    return sendError(res, adopted.error());
  }
  targetsChanged(*id);
  spdlog::info("move.in webhook_id={}", *id);
  sendJson(res, 200, {{"id", *id}, {"node", nodeId_}});
}

void MoveApi::dropIncoming(const HttpRequest& req, HttpResponse& res) {
  auto id = pathId(req, res, 1, "webhook");
  if (!id) return;
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"})
    std::filesystem::remove(incomingPath(*id).string() + suffix, ec);
  res.status = 204;
}

}  // namespace webhooker::server
