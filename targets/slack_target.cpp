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

// Slack's mrkdwn reads &, < and > as control characters everywhere, code
// blocks included ("<!channel>", "<https://x|a link>"): its rules say to send
// them as &amp; &lt; &gt;, which Slack shows as the characters.
std::string escapeMrkdwn(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else out += c;
  }
  return out;
}

// Inside the ``` block: three backticks in a row would end the block early
// and let the rest of the body format the message, so a zero-width space
// (U+200B) goes between backticks that touch. It is invisible, the text
// reads the same, and no run of two backticks remains.
std::string breakBacktickRuns(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '`' && i > 0 && text[i - 1] == '`') out += "\u200B";
    out += text[i];
  }
  return out;
}

// Inside an inline `code` span one backtick ends it, so the sender's method
// and content type show theirs as U+02CB (ˋ, which looks the same).
std::string inlineCode(std::string_view text) {
  std::string out;
  for (const char c : escapeMrkdwn(text)) {
    if (c == '`') out += "\u02CB";
    else out += c;
  }
  return "`" + out + "`";
}

}  // namespace

std::string slackMessageText(const EventPayload& p) {
  std::string text = fmt::format(
      "*Webhook event* {} · {} · {} bytes\n",
      inlineCode(p.method + " " + (p.contentType.empty() ? "(no content type)" : p.contentType)),
      p.receivedAt, p.body.size());
  if (p.body.empty()) return text + "_(empty body)_";
  std::string shown;
  // Keys in the sender's order, numbers as written (prettyJsonText).
  if (!parseJsonText(p.body).is_discarded())
    shown = prettyJsonText(p.body);
  else if (isValidUtf8(p.body))
    shown = p.body;
  else
    return text + "_(binary body, not shown)_";
  // Cut first, then escape: a cut never falls inside an entity.
  std::string kept = cutUtf8(shown, SlackTarget::kMaxBodyChars);
  const bool cut = kept.size() < shown.size();
  shown = breakBacktickRuns(escapeMrkdwn(kept));
  return text + "```\n" + shown + (cut ? "\n…" : "") + "\n```" +
         (cut ? fmt::format("\n_(body cut to {} characters)_", SlackTarget::kMaxBodyChars) : "");
}

Result<OutboundRequest> SlackTarget::buildRequest(const DeliveryContext& ctx, const Task&) {
  if (const auto* error = std::get_if<Error>(&ctx.config)) return *error;
  const auto* config = std::get_if<SlackDeliveryConfig>(&ctx.config);
  if (!config) return makeError(error_code::kInvalidConfig, "the target has no slack config");
  OutboundRequest request;
  request.url = config->webhookUrl;
  request.headers = {{"Content-Type", "application/json"}};
  // With a transform, its output is the Slack message itself ({"text"} or
  // {"blocks"}), not an event to describe.
  if (ctx.transformed) {
    request.body = ctx.payload.body;
    return request;
  }
  request.body = nlohmann::json{{"text", slackMessageText(ctx.payload)}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  return request;
}

}  // namespace webhooker
