#include "server/history_views.h"

#include <algorithm>
#include <cctype>

#include "base/ascii_case.h"
#include "base/secret.h"
#include "base/utf8.h"

namespace webhooker::server {

namespace {

using nlohmann::json;

template <typename T>
json orNull(const std::optional<T>& value) {
  return value ? json(*value) : json();
}

json attemptJson(const AttemptRow& a) {
  return {{"attempt", a.attempt},
          {"status_code", orNull(a.statusCode)},
          {"success", a.success},
          {"error", orNull(a.error)},
          {"duration_ms", a.durationMs},
          {"response_body", a.responseBody},
          {"created_at", a.createdAt}};
}

}  // namespace

TargetLabels::TargetLabels(MainStore& store, std::string webhookId)
    : store_(store), webhookId_(std::move(webhookId)) {}

void TargetLabels::describe(const std::string& targetId, json& out) {
  auto it = labels_.find(targetId);
  if (it == labels_.end()) {
    std::optional<Label> label;
    // Only the name and type are kept: the record's config holds credentials.
    if (auto t = store_.getTarget(webhookId_, targetId))
      label = Label{t->name, t->type, t->deletedAt.has_value()};
    it = labels_.emplace(targetId, std::move(label)).first;
  }
  out["target_name"] = it->second ? json(it->second->name) : json();
  out["target_type"] = it->second ? json(targetTypeWord(it->second->type)) : json();
  if (it->second && it->second->deleted) out["target_deleted"] = true;
}

void putBody(json& out, std::string_view contentType, const std::string& body) {
  if (isTextContentType(contentType) && isValidUtf8(body)) {
    out["body"] = body;
    out["body_encoding"] = "text";
  } else {
    out["body"] = base64Encode(body);
    out["body_encoding"] = "base64";
  }
}

bool isTextContentType(std::string_view contentType) {
  const std::string ct = asciiLower(contentType);
  // The same rule as the delivery_history view's body_preview.
  return ct.rfind("text/", 0) == 0 || ct.find("json") != std::string::npos ||
         ct.find("xml") != std::string::npos ||
         ct.find("x-www-form-urlencoded") != std::string::npos;
}

json deliveryJson(const DeliveryRecord& d, TargetLabels& labels) {
  json out = {{"id", d.id},
              {"event_id", d.eventId},
              {"target_id", d.targetId}};
  labels.describe(d.targetId, out);
  out.update({{"status", statusWord(d.status)},
              {"attempts", d.attempts},
              {"series_start", d.seriesStart},
              {"next_attempt_at", orNull(d.nextAttemptAt)},
              {"last_status_code", orNull(d.lastStatusCode)},
              {"failure_reason", orNull(d.failureReason)},
              {"last_attempt_at", orNull(d.lastAttemptAt)},
              {"last_error", orNull(d.lastError)},
              {"event_received_at", d.eventReceivedAt},
              {"event_type", orNull(d.eventType)},
              {"created_at", d.createdAt},
              {"updated_at", d.updatedAt}});
  if (!d.attemptRows.empty()) {
    json results = json::array();
    for (const AttemptRow& a : d.attemptRows) results.push_back(attemptJson(a));
    out["results"] = std::move(results);
  }
  return out;
}

json eventSummaryJson(const EventRecord& e, TargetLabels& labels) {
  json deliveries = json::array();
  for (const DeliveryRecord& d : e.deliveries) deliveries.push_back(deliveryJson(d, labels));
  return {{"id", e.id},
          {"received_at", e.receivedAt},
          {"event_type", orNull(e.eventType)},
          {"entrypoint_id", e.entrypointId},
          {"method", e.method},
          {"path", e.path},
          {"query", e.query},
          {"content_type", e.contentType},
          {"body_size", e.bodySize},
          {"remote_addr", e.remoteAddr},
          {"idempotency_key", orNull(e.idempotencyKey)},
          {"deliveries", std::move(deliveries)}};
}

json eventDetailJson(const EventRecord& e, TargetLabels& labels) {
  json out = eventSummaryJson(e, labels);
  json headers = json::array();
  for (const auto& [name, value] : e.headers) headers.push_back({name, value});
  out["headers"] = std::move(headers);
  putBody(out, e.contentType, e.body);
  // A delivery with no attempt yet still lists its (empty) results.
  for (json& d : out["deliveries"])
    if (!d.contains("results")) d["results"] = json::array();
  return out;
}

}  // namespace webhooker::server
