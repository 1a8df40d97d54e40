#include "targets/slack_target.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/json_text.h"
#include "base/utf8.h"

namespace webhooker {

namespace {

// The first `maxChars` characters (code points) of valid UTF-8 text: the
// cut falls on a character boundary, so the message stays valid text.
std::string cutUtf8(const std::string& text, size_t maxChars) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (chars == maxChars) return text.substr(0, i);
    ++chars;
  }
  return text;
}

}  // namespace

std::string slackMessageText(const EventPayload& p) {
  std::string text = fmt::format("*Webhook event* `{} {}` · {} · {} bytes\n",
                                 p.method, p.contentType.empty() ? "(no content type)" : p.contentType,
                                 p.receivedAt, p.body.size());
  if (p.body.empty()) return text + "_(empty body)_";
  std::string shown;
  // ordered_json: shown with the keys in the sender's order, not sorted.
  const auto json = parseJsonText(p.body);
  if (!json.is_discarded())
    shown = json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  else if (isValidUtf8(p.body))
    shown = p.body;
  else
    return text + "_(binary body, not shown)_";
  std::string kept = cutUtf8(shown, SlackTarget::kMaxBodyChars);
  const bool cut = kept.size() < shown.size();
  shown = std::move(kept);
  return text + "```\n" + shown + (cut ? "\n…" : "") + "\n```" +
         (cut ? fmt::format("\n_(body cut to {} characters)_", SlackTarget::kMaxBodyChars) : "");
}

Result<OutboundRequest> SlackTarget::buildRequest(const DeliveryContext& ctx, const Task&) {
  const auto config = nlohmann::json::parse(ctx.target.configJson, nullptr, false);
  if (!config.is_object() || !config.contains("webhook_url") || !config["webhook_url"].is_string())
    return makeError(error_code::kInvalidConfig, "the slack target has no valid webhook_url");
  auto url = parseHttpUrl(config["webhook_url"].get<std::string>());
  if (!url) return makeError(error_code::kInvalidConfig, "the slack webhook_url is not a valid URL");
  OutboundRequest request;
  request.url = std::move(*url);
  request.headers = {{"Content-Type", "application/json"}};
  request.body = nlohmann::json{{"text", slackMessageText(ctx.payload)}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  return request;
}

}  // namespace webhooker
