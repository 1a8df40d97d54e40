#include "server/json_io.h"

#include "base/json_depth.h"

namespace webhooker::server {

namespace {

template <typename Json>
void sendDump(HttpResponse& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n",
                  "application/json");
}

}  // namespace

void sendJson(HttpResponse& res, int status, const nlohmann::json& body) {
  sendDump(res, status, body);
}

void sendOrderedJson(HttpResponse& res, int status, const nlohmann::ordered_json& body) {
  sendDump(res, status, body);
}

void sendError(HttpResponse& res, int status, std::string_view code,
               std::string_view message) {
  sendJson(res, status, {{"error", {{"code", code}, {"message", message}}}});
}

int statusFor(const Error& error) {
  if (error.isNotFound()) return 404;
  if (error.isConflict()) return 409;
  if (error.isStorageUnavailable()) return 503;
  if (error.isInternal()) return 500;
  return 400;  // invalid_json, invalid_config, invalid_retry, invalid_field, ...
}

HttpResponse errorResponse(int status, std::string_view code, std::string_view message) {
  HttpResponse res;
  sendError(res, status, code, message);
  return res;
}

void sendError(HttpResponse& res, const Error& error) {
  sendError(res, statusFor(error), error.code, error.message);
}

std::optional<nlohmann::json> parseJsonObject(const HttpRequest& req,
                                              HttpResponse& res) {
  if (!jsonDepthWithin(req.body)) {
    sendError(res, 400, error_code::kInvalidJson,
              "the request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    return std::nullopt;
  }
  auto body = nlohmann::json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    sendError(res, 400, error_code::kInvalidJson, "the request body is not valid JSON");
    return std::nullopt;
  }
  if (!body.is_object()) {
    sendError(res, 400, error_code::kExpectedObject, "the request body must be a JSON object");
    return std::nullopt;
  }
  return body;
}

}  // namespace webhooker::server
