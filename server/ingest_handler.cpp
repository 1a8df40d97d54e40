#include "server/ingest_handler.h"

#include <spdlog/spdlog.h>

#include <unordered_map>

#include "base/uuid.h"
#include "server/inbound_verifier.h"
#include "server/json_io.h"
#include "server/stored_headers.h"

namespace webhooker::server {

namespace {

constexpr size_t kMaxIdempotencyKeyLength = 255;

// Idempotency-Key is the general convention; webhook-id is what Standard
// Webhooks senders put on every retry of the same message. Read from the
// map, not with get_header_value, which cuts a value at a NUL byte: two
// different keys would be taken for one and the second event dropped.
std::optional<std::string> idempotencyKeyOf(const httplib::Request& req) {
  for (const char* name : {"Idempotency-Key", "webhook-id"})
    if (const auto it = req.headers.find(name); it != req.headers.end()) return it->second;
  return std::nullopt;
}

}  // namespace

IngestHandler::IngestHandler(MainStore& store, EventsDbPool& eventsDbs, Dispatcher& dispatcher,
                             ServerMetrics& metrics, IngestOptions options)
    : routes_(store),
      eventsDbs_(eventsDbs),
      dispatcher_(dispatcher),
      metrics_(metrics),
      options_(options) {}

void IngestHandler::handle(const httplib::Request& req, std::string body,
                           httplib::Response& res) {
  if (!accepting_) {
    res.set_header("Retry-After", "5");
    return sendError(res, 503, "shutting_down", "webhooker is shutting down; retry shortly");
  }
  const std::string rawId = req.matches[1];
  if (!isUuid(rawId)) return sendError(res, 404, "not_found", "no such entrypoint");
  if (body.size() > options_.bodyLimit)
    return sendError(res, 413, "body_too_large",
                     "the body is larger than the limit of " + std::to_string(options_.bodyLimit) +
                         " bytes");

  auto route = routes_.lookup(normalizeUuid(rawId));
  if (!route) {
    if (route.error().isNotFound())
      return sendError(res, 404, "not_found", "no such entrypoint");
    spdlog::error("ingest.lookup_failed entrypoint_id={} error=\"{}\"", rawId,
                  route.error().message);
    return sendError(res, 503, "storage_unavailable", "the event was not stored; retry later");
  }
  const Entrypoint* entrypoint = &route.value()->entrypoint;
  if (!entrypoint->active)
    return sendError(res, 410, "entrypoint_inactive", "this entrypoint is not accepting events");
  if (entrypoint->verification != "none") {
    const auto header = [&req](const char* name) { return req.get_header_value(name); };
    if (auto verified = verifyInbound(entrypoint->verification, entrypoint->verificationSecret,
                                      header, body, std::chrono::system_clock::now());
        !verified) {
      metrics_.verificationFailed(verified.error().code);
      spdlog::info("ingest.verification_failed entrypoint_id={} reason={}", entrypoint->id,
                   verified.error().code);
      return sendError(res, 401, "signature_invalid", verified.error().message);
    }
  }

  auto idempotencyKey = idempotencyKeyOf(req);
  if (idempotencyKey && (idempotencyKey->empty() || idempotencyKey->size() > kMaxIdempotencyKeyLength))
    return sendError(res, 400, "invalid_idempotency_key",
                     "the idempotency key must be 1 to 255 characters");

  std::vector<std::string> targetIds;
  std::unordered_map<std::string, std::string> typeOf;
  for (const IngestRoute::ActiveTarget& t : route.value()->targets) {
    targetIds.push_back(t.id);
    typeOf[t.id] = t.type;
  }

  InboundEvent event;
  event.entrypointId = entrypoint->id;
  event.method = req.method;
  event.path = req.path;
  if (const size_t q = req.target.find('?'); q != std::string::npos)
    event.query = req.target.substr(q + 1);
  for (const auto& [name, value] : req.headers)
    if (isStoredHeader(name)) event.headers.emplace_back(name, value);
  event.contentType = req.get_header_value("Content-Type");
  event.body = std::move(body);
  event.remoteAddr = req.remote_addr;
  event.idempotencyKey = std::move(idempotencyKey);

  auto db = eventsDbs_.get(entrypoint->webhookId);
  if (!db && db.error().isNotFound())  // the webhook was deleted meanwhile
    return sendError(res, 404, "not_found", "no such entrypoint");
  if (!db) {
    spdlog::error("ingest.store_failed webhook_id={} error=\"{}\"", entrypoint->webhookId,
                  db.error().message);
    return sendError(res, 503, "storage_unavailable", "the event was not stored; retry later");
  }
  auto stored = db.value()->ingest(event, targetIds, options_.idempotencyWindow);
  if (!stored) {
    spdlog::error("ingest.store_failed webhook_id={} error=\"{}\"", entrypoint->webhookId,
                  stored.error().message);
    return sendError(res, 503, "storage_unavailable", "the event was not stored; retry later");
  }

  // Committed: from here on the event is never lost, whatever happens next.
  sendJson(res, 200,
           {{"event_id", stored->eventId},
            {"deliveries", stored->deliveries.size()},
            {"duplicate", stored->duplicate}});
  if (stored->duplicate) {
    spdlog::info("ingest.duplicate webhook_id={} event_id={}", entrypoint->webhookId,
                 stored->eventId);
    return;
  }
  metrics_.eventReceived();
  spdlog::debug("ingest.stored webhook_id={} event_id={} deliveries={}", entrypoint->webhookId,
                stored->eventId, stored->deliveries.size());

  std::vector<Task> tasks;
  tasks.reserve(stored->deliveries.size());
  for (const StoredDelivery& d : stored->deliveries) {
    Task task;
    task.deliveryId = d.id;
    task.eventId = stored->eventId;
    task.webhookId = entrypoint->webhookId;
    task.targetId = d.targetId;
    task.targetType = typeOf[d.targetId];
    if (event.body.size() <= Task::kInlineBodyLimit)
      task.payload = EventPayload{event.method, event.headers, event.contentType, event.body,
                                  stored->receivedAt};
    tasks.push_back(std::move(task));
  }
  dispatcher_.submit(std::move(tasks));
}

}  // namespace webhooker::server
