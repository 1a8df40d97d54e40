// Admin API: pull targets. A consumer leases a pull target's waiting
// deliveries, then acks, nacks or extends what it holds (docs/api.md#pull).
// The lease token is shown once and only its SHA-256 is stored; a request is
// checked whole before anything is written, and one that names an id its
// lease does not hold answers that id's error and changes nothing of it.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/secret.h"
#include "base/time_format.h"
#include "base/utf8.h"
#include "base/uuid.h"
#include "server/admin_api.h"
#include "server/history_params.h"
#include "server/history_views.h"
#include "server/json_io.h"
#include "server/request_fields.h"
#include "targets/backoff.h"
#include "routing/jq_sandbox.h"

namespace webhooker::server {

namespace {

using nlohmann::json;

constexpr std::string_view kLeasePrefix = "whl_";
constexpr int64_t kMaxLeaseCount = 100;
constexpr int64_t kDefaultLeaseCount = 10;
constexpr int64_t kMaxLeaseSeconds = 3600;
constexpr int64_t kDefaultLeaseSeconds = 30;
constexpr int64_t kMaxNackDelaySeconds = 86400;
constexpr size_t kMaxIds = 100;
constexpr size_t kMaxLeaseText = 128;

// A body that may be left out altogether: empty is {}.
std::optional<json> bodyOrEmpty(const HttpRequest& req, HttpResponse& res) {
  if (req.body.empty()) return json::object();
  return parseJsonObject(req, res);
}

// {"lease": "whl_...", "ids": [<delivery id>, ...]} plus `extra` fields:
// the shape every settle request shares; 400 for anything else.
struct SettleRequest {
  std::string leaseHash;
  std::vector<std::string> ids;
};
Result<SettleRequest> settleRequest(const json& body, std::string_view extra) {
  const auto bad = [](std::string m) { return makeError(error_code::kInvalidField, std::move(m)); };
  if (auto r = refuseUnknownFields(body, {"lease", "ids", extra}); !r) return r.error();
  if (!body.contains("lease") || !body["lease"].is_string())
    return bad("lease must be the token a lease answered");
  const std::string& token = body["lease"].get_ref<const std::string&>();
  if (!token.starts_with(kLeasePrefix) || token.size() > kMaxLeaseText)
    return bad("lease must be the token a lease answered (\"whl_...\")");
  if (!body.contains("ids") || !body["ids"].is_array() || body["ids"].empty() ||
      body["ids"].size() > kMaxIds)
    return bad("ids must be an array of 1 to 100 delivery ids");
  SettleRequest out{sha256Hex(token), {}};
  for (const json& id : body["ids"]) {
    if (!id.is_string() || !isUuid(id.get_ref<const std::string&>()))
      return bad("ids must be an array of 1 to 100 delivery ids");
    if (std::find(out.ids.begin(), out.ids.end(), id.get<std::string>()) != out.ids.end())
      return bad("ids names " + id.get<std::string>() + " twice");
    out.ids.push_back(id.get<std::string>());
  }
  return out;
}

// A delivery as a lease hands it out: the event as a receiver would get it
// (its target's transform applied).
json leasedJson(const LeasedDelivery& d, const EventPayload& payload) {
  json headers = json::array();
  for (const auto& [name, value] : payload.headers) headers.push_back({name, value});
  json out = {{"id", d.id},
              {"event_id", d.eventId},
              {"attempt", d.attempt},
              {"event_type", payload.eventType ? json(*payload.eventType) : json(nullptr)},
              {"received_at", payload.receivedAt},
              {"method", payload.method},
              {"content_type", payload.contentType},
              {"headers", std::move(headers)}};
  putBody(out, payload.contentType, payload.body);
  return out;
}

}  // namespace

std::optional<TargetRecord> AdminApi::pullTarget(const HttpRequest& req, HttpResponse& res,
                                                 const std::string& webhookId) {
  auto tid = targetRef(req, res, webhookId);
  if (!tid) return std::nullopt;
  auto target = store_.getTarget(webhookId, *tid);
  if (!target) {
    sendError(res, target.error());
    return std::nullopt;
  }
  if (target->deletedAt) {
    sendError(res, 404, error_code::kNotFound, "target " + *tid + " was deleted");
    return std::nullopt;
  }
  if (!target->pulled()) {
    sendError(res, 409, error_code::kNotPullTarget,
              "target " + *tid + " is of type " + std::string(targetTypeWord(target->type)) +
                  "; only a pull target's deliveries are leased");
    return std::nullopt;
  }
  return std::move(target.value());
}

void AdminApi::leaseDeliveries(const HttpRequest& req, HttpResponse& res) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto target = pullTarget(req, res, *id);
  if (!target) return;
  auto body = bodyOrEmpty(req, res);
  if (!body) return;
  if (auto r = refuseUnknownFields(*body, {"count", "lease_seconds"}); !r)
    return sendError(res, r.error());
  auto count = intField(*body, "count", 1, kMaxLeaseCount);
  if (!count) return sendError(res, count.error());
  auto seconds = intField(*body, "lease_seconds", 1, kMaxLeaseSeconds);
  if (!seconds) return sendError(res, seconds.error());
  if (!target->active)
    return sendError(res, 409, error_code::kTargetInactive,
                     "target " + target->id + " is paused; enable it to lease");
  const TargetRouting routing = storedTargetRouting(target->routingJson);
  // A webhook with no events file has had no event: nothing to lease, and
  // no file to make for it.
  auto db = webhookEventsDb(store_, eventsDbs_, *id);
  if (!db) return sendError(res, db.error());

  const std::string token = newToken(kLeasePrefix);
  const std::string hash = sha256Hex(token);
  const std::chrono::seconds leaseFor(seconds->value_or(kDefaultLeaseSeconds));
  auto grant = db.value() ? db.value()->lease(target->id,
                                              static_cast<int>(count->value_or(kDefaultLeaseCount)),
                                              target->fifo(), hash, leaseFor)
                          : Result<LeaseGrant>(LeaseGrant{store_.clock().now() + leaseFor, {}});
  if (!grant) return sendError(res, grant.error());

  json deliveries = json::array();
  for (const LeasedDelivery& d : grant->deliveries) {
    auto payload = db.value()->loadPayload(d.eventId);
    if (!payload) {
      // The event went (its webhook's retention cannot take a waiting one):
      // let go, so the error shows in the log and not as a lost delivery.
      spdlog::error("pull.payload_unavailable delivery_id={} error=\"{}\"", d.id,
                    payload.error().message);
      (void)db.value()->releaseLease(d.id, hash);
      continue;
    }
    if (!routing.transformJq.empty()) {
      auto transformed = routing_ ? routing_->transform(routing, payload.value(), *id)
                                  : Result<TransformedBody>(makeError(
                                        error_code::kJqUnavailable, "no jq evaluator is running"));
      if (!transformed) {
        if (jq_error::isRetryable(transformed.error()) ||
            !failTransform(*db.value(), target->type, d, transformed.error().message))
          (void)db.value()->releaseLease(d.id, hash);  // offered again by a later lease
        continue;
      }
      applyTransformedBody(payload.value(), std::move(transformed->body));
    }
    deliveries.push_back(leasedJson(d, payload.value()));
  }
  spdlog::debug("pull.leased webhook_id={} target_id={} deliveries={}", *id, target->id,
                deliveries.size());
  sendJson(res, 200,
           {{"lease", token},
            {"expires_at", formatTime(grant->until)},
            {"deliveries", std::move(deliveries)}});
}

bool AdminApi::failTransform(EventsDb& db, TargetType targetType, const LeasedDelivery& d,
                             const std::string& error) {
  // Deterministic: the same program fails the same way every time, so the
  // delivery ends now, as an attempted one's does.
  AttemptRecord record;
  record.deliveryId = d.id;
  record.attempt = d.attempt;
  record.error = error;
  record.newStatus = DeliveryStatus::kFailed;
  record.failureReason = FailureKind::kTransformFailed;
  if (auto r = db.recordAttempt(record); !r) {
    spdlog::error("pull.record_failed delivery_id={} error=\"{}\"", d.id, r.error().message);
    return false;
  }
  spdlog::warn("delivery.transform_failed delivery_id={} error=\"{}\"", d.id, error);
  if (attempts_) attempts_->outcome(targetType, DeliveryStatus::kFailed, FailureKind::kTransformFailed);
  return true;
}

void AdminApi::ackDeliveries(const HttpRequest& req, HttpResponse& res) {
  settle(req, res, LeaseAction::kAck);
}
void AdminApi::nackDeliveries(const HttpRequest& req, HttpResponse& res) {
  settle(req, res, LeaseAction::kNack);
}
void AdminApi::extendLease(const HttpRequest& req, HttpResponse& res) {
  settle(req, res, LeaseAction::kExtend);
}

void AdminApi::settle(const HttpRequest& req, HttpResponse& res, LeaseAction action) {
  auto id = webhookRef(req, res);
  if (!id) return;
  auto target = pullTarget(req, res, *id);
  if (!target) return;
  auto body = parseJsonObject(req, res);
  if (!body) return;
  const char* extra = action == LeaseAction::kNack     ? "delay_seconds"
                      : action == LeaseAction::kExtend ? "lease_seconds"
                                                       : "";
  auto request = settleRequest(*body, extra);
  if (!request) return sendError(res, request.error());
  LeaseSettlement s;
  s.action = action;
  s.targetId = target->id;
  s.leaseHash = request->leaseHash;
  s.ids = std::move(request->ids);
  if (action == LeaseAction::kExtend) {
    auto seconds = intField(*body, "lease_seconds", 1, kMaxLeaseSeconds);
    if (!seconds) return sendError(res, seconds.error());
    s.extendBy = std::chrono::seconds(seconds->value_or(kDefaultLeaseSeconds));
  } else if (action == LeaseAction::kNack) {
    auto delay = intField(*body, "delay_seconds", 0, kMaxNackDelaySeconds);
    if (!delay) return sendError(res, delay.error());
    s.nackError = "nacked by the consumer";
    // The retry budget is the target's: max_retries nacks, then a dead
    // letter. Without delay_seconds, the target's backoff.
    s.retryDelay = [&, policy = target->retry, given = delay.value()](
                       int attemptInSeries) -> std::optional<std::chrono::milliseconds> {
      if (attemptInSeries > policy.maxRetries) return std::nullopt;
      if (given) return std::chrono::seconds(*given);
      return retryDelay(policy, attemptInSeries, random_);
    };
  }
  auto db = webhookEventsDb(store_, eventsDbs_, *id);
  if (!db) return sendError(res, db.error());
  auto answers = db.value() ? db.value()->settleLease(s)
                            : Result<std::vector<LeaseAnswer>>(EventsDb::settleWithoutFile(s));
  if (!answers) return sendError(res, answers.error());

  json results = json::array();
  for (const LeaseAnswer& a : answers.value()) {
    if (!a.code.empty()) {
      results.push_back({{"id", a.id}, {"error", {{"code", a.code}, {"message", a.message}}}});
      continue;
    }
    json r = {{"id", a.id}, {"status", statusWord(a.status)}};
    const std::optional<FailureReason> reason =
        a.status == DeliveryStatus::kFailed
            ? std::optional<FailureReason>(FailureKind::kMaxAttempts)
            : std::nullopt;
    if (action == LeaseAction::kExtend) {
      r["expires_at"] = formatTime(*a.at);
    } else {
      r["attempt"] = a.attempt;
      if (a.at) r["next_attempt_at"] = formatTime(*a.at);
      if (reason) r["failure_reason"] = failureReasonWord(*reason);
      if (attempts_) {
        attempts_->attempted(target->type, std::chrono::milliseconds(a.heldMs));
        attempts_->outcome(target->type, a.status, reason);
      }
      if (a.status == DeliveryStatus::kFailed)
        spdlog::warn("delivery.dead_lettered webhook_id={} delivery_id={} target_id={} "
                     "reason=max_attempts",
                     *id, a.id, target->id);
    }
    results.push_back(std::move(r));
  }
  sendJson(res, 200, {{"results", std::move(results)}});
}

}  // namespace webhooker::server
