// The JSON the history and redrive endpoints show: events, deliveries and
// attempts. Targets appear by id, name and type only — never their config.
// Bodies of textual content types that are valid UTF-8 are shown as text,
// anything else as base64 ("body_encoding": "base64").
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <unordered_map>

#include "storage/events_db.h"
#include "storage/main_store.h"

namespace webhooker::server {

// Names and types of a webhook's targets, looked up in the main DB once per
// request. Soft-deleted targets keep their name. Not thread-safe: one per
// request.
class TargetLabels {
 public:
  TargetLabels(MainStore& store, std::string webhookId);
  // Adds target_name, target_type (null when unknown) and, for a deleted
  // target, target_deleted to `out`.
  void describe(const std::string& targetId, nlohmann::json& out);

 private:
  struct Label {
    std::string name;
    TargetType type = TargetType::kHttp;
    bool deleted = false;
  };
  MainStore& store_;
  const std::string webhookId_;
  std::unordered_map<std::string, std::optional<Label>> labels_;
};

// A delivery with its latest attempt; with every attempt ("results") when
// the record carries them.
nlohmann::json deliveryJson(const DeliveryRecord& delivery, TargetLabels& labels);
// An event's metadata and its deliveries, as a listing shows it.
nlohmann::json eventSummaryJson(const EventRecord& event, TargetLabels& labels);
// The summary plus headers, body and every attempt of every delivery.
nlohmann::json eventDetailJson(const EventRecord& event, TargetLabels& labels);

// Sets out["body"] and out["body_encoding"]: the text ("text") for a textual
// content type that is valid UTF-8, else base64 ("base64").
void putBody(nlohmann::json& out, std::string_view contentType, const std::string& body);

// Whether a body of `contentType` is meant to be read as text.
bool isTextContentType(std::string_view contentType);

}  // namespace webhooker::server
