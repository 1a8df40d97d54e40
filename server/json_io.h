// JSON in and out of the HTTP surface: one error shape everywhere,
// {"error": {"code": "...", "message": "..."}}.
#pragma once

#include "server/http_message.h"
#include <nlohmann/json.hpp>

#include <optional>
#include <string_view>

#include "base/result.h"

namespace webhooker::server {

void sendJson(HttpResponse& res, int status, const nlohmann::json& body);
// The same, keeping the order the keys were inserted in (a jq program's
// output, shown as the receiver would get it).
void sendOrderedJson(HttpResponse& res, int status, const nlohmann::ordered_json& body);
void sendError(HttpResponse& res, int status, std::string_view code,
               std::string_view message);

// Sends an Error with the HTTP status its code implies (not_found → 404,
// storage_busy → 503, invalid_* → 400, ...).
void sendError(HttpResponse& res, const Error& error);
// A whole answer in the error shape, for callers that hand responses on.
HttpResponse errorResponse(int status, std::string_view code, std::string_view message);
int statusFor(const Error& error);

// The request body as a JSON object. On failure the 400 is already sent
// (invalid_json / expected_object) and nullopt comes back.
std::optional<nlohmann::json> parseJsonObject(const HttpRequest& req,
                                              HttpResponse& res);

}  // namespace webhooker::server
