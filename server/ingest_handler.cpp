#include "server/ingest_handler.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "base/json_depth.h"
#include "base/uuid.h"
#include "base/ascii_case.h"
#include "server/handshake.h"
#include "server/inbound_verifier.h"
#include "server/json_io.h"
#include "server/stored_headers.h"

namespace webhooker::server {

namespace {

constexpr size_t kMaxIdempotencyKeyLength = 255;

// The sender's own id for a message, so that its retries and replays make
// one event. On an entrypoint that verifies GitHub or Stripe signatures, the
// provider's id comes first: X-GitHub-Delivery, or the "id" of a Stripe
// event (inside the signed body). Otherwise Idempotency-Key (the general
// convention) or webhook-id (Standard Webhooks), the first value of the
// first present. Provider ids are prefixed with their scheme, so they never
// meet another sender's keys of the same text.
std::optional<std::string> idempotencyKeyOf(const HttpRequest& req,
                                            std::optional<VerificationScheme> scheme) {
  if (scheme == VerificationScheme::kGithub) {
    if (const auto it = req.headers.find("X-GitHub-Delivery"); it != req.headers.end())
      return "github:" + it->second;
  } else if (scheme == VerificationScheme::kStripe && jsonDepthWithin(req.body)) {
    const auto event = nlohmann::json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (event.is_object() && event.contains("id") && event["id"].is_string())
      return "stripe:" + event["id"].get<std::string>();
  }
  for (const char* name : {"Idempotency-Key", "webhook-id"})
    if (const auto it = req.headers.find(name); it != req.headers.end()) return it->second;
  return std::nullopt;
}

// A header that carries the shared secret itself (a token or Basic scheme's,
// such as GitLab's X-Gitlab-Token): never stored with the event.
bool isCredentialHeader(const InboundSettings& inbound, std::string_view name) {
  if (!inbound.scheme || (inbound.scheme->algorithm != SignatureAlgorithm::kToken &&
                          inbound.scheme->algorithm != SignatureAlgorithm::kBasic))
    return false;
  std::string_view names = inbound.scheme->header;
  while (!names.empty()) {
    const size_t bar = std::min(names.find('|'), names.size());
    if (equalsIgnoringCase(names.substr(0, bar), name)) return true;
    names.remove_prefix(std::min(bar + 1, names.size()));
  }
  return false;
}

}  // namespace

IngestHandler::IngestHandler(MainStore& store, EventsDbPool& eventsDbs, Dispatcher& dispatcher,
                             ServerMetrics& metrics, MoveFence& moveFence,
                             IngestOptions options, IngestRoutingParts routing)
    : routes_(store),
      eventsDbs_(eventsDbs),
      dispatcher_(dispatcher),
      metrics_(metrics),
      moveFence_(moveFence),
      options_(options),
      routing_(routing.evaluator, routing.metrics, options.routingThreads,
               options.maxRoutingQueue) {}

IngestHandler::~IngestHandler() {
  MutexLock lock(parkedMutex_);
  parkedDone_.wait(lock, [this]() REQUIRES(parkedMutex_) { return parked_ == 0; });
}

std::shared_ptr<const IngestRoute> IngestHandler::admit(const HttpRequest& req,
                                                       const Respond& respond) {
  const auto refuse = [&respond](int status, std::string_view code, std::string_view message) {
    respond(errorResponse(status, code, message));
    return nullptr;
  };
  if (!accepting_) {
    HttpResponse res =
        errorResponse(503, error_code::kShuttingDown, "webhooker is shutting down; retry shortly");
    res.set_header("Retry-After", "5");
    respond(std::move(res));
    return nullptr;
  }
  const std::string& rawId = req.matches[1];
  if (!isUuid(rawId)) return refuse(404, error_code::kNotFound, "no such entrypoint");
  if (req.body.size() > options_.bodyLimit)
    return refuse(
        413, error_code::kBodyTooLarge,
        "the body is larger than the limit of " + std::to_string(options_.bodyLimit) + " bytes");
  auto route = routes_.lookup(normalizeUuid(rawId));
  if (!route) {
    if (route.error().isNotFound()) return refuse(404, error_code::kNotFound, "no such entrypoint");
    spdlog::error("ingest.lookup_failed entrypoint_id={} error=\"{}\"", rawId,
                  route.error().message);
    return refuse(503, error_code::kStorageUnavailable, "the event was not stored; retry later");
  }
  if (route.value()->webhookMovingOut) {
    // Senders (and clients behind HAProxy) retry a 503: by then the route
    // leads to the node the webhook moved to.
    HttpResponse res = errorResponse(503, error_code::kWebhookMoving,
                                     "this webhook is moving to another node; retry shortly");
    res.set_header("Retry-After", "1");
    respond(std::move(res));
    return nullptr;
  }
  if (!route.value()->entrypoint.active)
    return refuse(410, error_code::kEntrypointInactive, "this entrypoint is not accepting events");
  return std::move(route.value());
}

void IngestHandler::handleGet(HttpRequest& req, Respond respond) {
  const auto route = admit(req, respond);
  if (!route) return;
  const InboundSettings& inbound = route->inbound;
  auto answer = inbound.unusable ? std::nullopt : answerHandshakeGet(inbound, req.params);
  if (!answer) {
    HttpResponse res = errorResponse(405, error_code::kMethodNotAllowed,
                                     "GET is not allowed here; allowed: POST");
    res.set_header("Allow", "POST");
    return respond(std::move(res));
  }
  const std::string_view kind = handshakeName(inbound.handshake);
  metrics_.handshake(kind, answer->answered);
  spdlog::info("ingest.handshake entrypoint_id={} kind={} status={}", route->entrypoint.id, kind,
               answer->response.status);
  respond(std::move(answer->response));
}

void IngestHandler::handle(HttpRequest& req, Respond respond) {
  const auto refuse = [&respond](int status, std::string_view code, std::string_view message) {
    respond(errorResponse(status, code, message));
  };
  // Before the route says whether the webhook is moving (see MoveFence).
  MoveFence::IngestPass pass = moveFence_.admitIngest();
  std::shared_ptr<const IngestRoute> route = admit(req, respond);
  if (!route) return;
  const Entrypoint& entrypoint = route->entrypoint;
  const InboundSettings& inbound = route->inbound;
  const auto header = [&req](const char* name) { return req.get_header_value(name); };
  const InboundRequest signedRequest{header, req.body, req.target, inbound.publicUrl};
  if (auto verified = inbound.unusable
                          ? Result<void>(makeError(error_code::kUnknownScheme,
                                                   "the entrypoint's settings are unreadable"))
                          : verifyRequest(inbound.scheme, inbound.secrets, signedRequest,
                                          std::chrono::system_clock::now());
      !verified) {
    const Error& why = verified.error();
    metrics_.verificationFailed(why.code);
    if (isUnusableSettings(why)) {
      // The operator has to act; the sender learns only that it was refused.
      spdlog::error("ingest.verification_unusable entrypoint_id={} reason={}", entrypoint.id,
                    why.code);
      return refuse(401, error_code::kVerificationFailed,
                    "this entrypoint cannot verify requests until its verification is set again");
    }
    spdlog::info("ingest.verification_failed entrypoint_id={} reason={}", entrypoint.id,
                 why.code);
    return refuse(401, error_code::kSignatureInvalid, why.message);
  }
  if (auto answer = answerHandshakePost(inbound, req.body)) {
    const std::string_view kind = handshakeName(inbound.handshake);
    metrics_.handshake(kind, answer->answered);
    spdlog::info("ingest.handshake entrypoint_id={} kind={} status={}", entrypoint.id, kind,
                 answer->response.status);
    return respond(std::move(answer->response));
  }

  auto idempotencyKey = idempotencyKeyOf(req, entrypoint.verification);
  if (idempotencyKey && (idempotencyKey->empty() || idempotencyKey->size() > kMaxIdempotencyKeyLength))
    return refuse(400, error_code::kInvalidIdempotencyKey,
                  "the idempotency key must be 1 to 255 characters");

  std::shared_ptr<EventsDb> held = eventsDbs_.getIfHeld(entrypoint.webhookId);
  InboundEvent event;
  event.entrypointId = entrypoint.id;
  event.method = req.method;
  event.path = req.path;
  if (const size_t q = req.target.find('?'); q != std::string::npos)
    event.query = req.target.substr(q + 1);
  for (const auto& [name, value] : req.headers)
    if (isStoredHeader(name) && !isCredentialHeader(inbound, name))
      event.headers.emplace_back(name, value);
  event.contentType = req.get_header_value("Content-Type");
  event.body = std::move(req.body);
  event.remoteAddr = req.remote_addr;
  event.idempotencyKey = std::move(idempotencyKey);

  {
    MutexLock lock(parkedMutex_);
    ++parked_;
  }
  if (held && !route->runsJq)
    return routeAndStore(std::move(route), std::move(held), std::move(event), std::move(respond),
                         std::move(pass));
  // Opening a file (a first event's also flushes it) and a jq program (its
  // whole time budget) may wait: not on the event loop.
  auto job =
      std::make_shared<std::tuple<std::shared_ptr<const IngestRoute>, std::shared_ptr<EventsDb>,
                                  InboundEvent, Respond, MoveFence::IngestPass>>(
          std::move(route), std::move(held), std::move(event), std::move(respond), std::move(pass));
  const std::string webhookId = entrypoint.webhookId;
  if (!routing_.post(webhookId, [this, job]() {
        auto& [r, d, e, answer, p] = *job;
        if (!d) d = openOrRefuse(r->entrypoint.webhookId, answer);
        if (!d) {
          answer = nullptr;  // nothing of the request may outlive the count
          p = nullptr;
          return unpark();
        }
        routeAndStore(std::move(r), std::move(d), std::move(e), std::move(answer), std::move(p));
      })) {
    std::get<Respond>(*job)(routingBusy());
    job.reset();
    unpark();
  }
}

HttpResponse IngestHandler::routingBusy() {
  HttpResponse res = errorResponse(503, error_code::kRoutingBusy,
                                   "too many events are waiting for their routing; retry shortly");
  res.set_header("Retry-After", "1");
  return res;
}

std::shared_ptr<EventsDb> IngestHandler::openOrRefuse(const std::string& webhookId,
                                                      const Respond& respond) {
  auto db = eventsDbs_.get(webhookId);
  if (db) return std::move(db.value());
  if (db.error().isNotFound()) {  // the webhook was deleted meanwhile
    respond(errorResponse(404, error_code::kNotFound, "no such entrypoint"));
  } else {
    spdlog::error("ingest.store_failed webhook_id={} error=\"{}\"", webhookId, db.error().message);
    respond(errorResponse(503, error_code::kStorageUnavailable,
                          "the event was not stored; retry later"));
  }
  return nullptr;
}

void IngestHandler::unpark() {
  MutexLock lock(parkedMutex_);
  --parked_;
  parkedDone_.notify_all();
}

void IngestHandler::routeAndStore(std::shared_ptr<const IngestRoute> route,
                                  std::shared_ptr<EventsDb> db, InboundEvent event,
                                  Respond respond, MoveFence::IngestPass pass) {
  RoutedEvent routed = routing_.route(*route, event);
  if (routed.retryLater) {
    // Stored now, the event would keep a verdict no program gave.
    spdlog::info("ingest.routing_deferred webhook_id={} reason={} error=\"{}\"",
                 route->entrypoint.webhookId, routed.retryLater->code,
                 routed.retryLater->message);
    respond(routingBusy());
    respond = nullptr;
    pass = nullptr;
    unpark();
    return;
  }
  event.eventType = routed.eventType;
  std::vector<std::string> targetIds = std::move(routed.targetIds);
  db->ingestAsync(
      std::move(event), std::move(targetIds), options_.idempotencyWindow,
      [this, route = std::move(route), routed = std::move(routed), respond = std::move(respond),
       handoff = dispatcher_.openHandoff(), pass = std::move(pass)](
          Result<IngestOutcome> stored, InboundEvent& committed) mutable {
        // Nothing of the request (its connection) may outlive the count.
        Respond answer = std::move(respond);
        finish(*route, routed, std::move(stored), committed, answer);
        answer = nullptr;
        handoff = nullptr;  // what the commit stored is submitted
        pass = nullptr;
        unpark();
      });
}

void IngestHandler::finish(const IngestRoute& route, const RoutedEvent& routed,
                           Result<IngestOutcome> stored, InboundEvent& event,
                           const Respond& respond) {
  const std::string& webhookId = route.entrypoint.webhookId;
  if (!stored) {
    spdlog::error("ingest.store_failed webhook_id={} error=\"{}\"", webhookId,
                  stored.error().message);
    return respond(errorResponse(503, error_code::kStorageUnavailable,
                                 "the event was not stored; retry later"));
  }
  // Committed: from here on the event is never lost, whatever happens next.
  HttpResponse res;
  // The deliveries go to the engine before the answer goes out, so a sender
  // that has its 200 finds them handed over.
  // A duplicate queues nothing: its count is 0, not the first event's.
  if (const auto& custom = route.inbound.response) {
    res.status = custom->status;
    res.set_content(custom->body, custom->contentType);
  } else {
    sendJson(res, 200,
             {{"event_id", stored->eventId},
              {"deliveries", stored->duplicate ? 0 : stored->deliveries.size()},
              {"duplicate", stored->duplicate}});
  }
  if (stored->duplicate) {
    spdlog::info("ingest.duplicate webhook_id={} event_id={}", webhookId, stored->eventId);
    return respond(std::move(res));
  }
  metrics_.eventReceived();
  routing_.countSkipped(routed);
  spdlog::debug("ingest.stored webhook_id={} event_id={} deliveries={}", webhookId,
                stored->eventId, stored->deliveries.size());

  const auto targetType = [&route](const std::string& targetId) {
    for (const IngestRoute::ActiveTarget& t : route.targets)
      if (t.id == targetId) return t.type;
    return TargetType::kHttp;  // not reached: each delivery is one of the route's targets
  };
  dispatcher_.submit(firstAttempts(webhookId, std::move(event), *stored, targetType));
  respond(std::move(res));
}

}  // namespace webhooker::server
