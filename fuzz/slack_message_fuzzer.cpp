// The Slack message for an event (targets/slack_target: slackMessageText).
// Properties:
//  - the text is valid UTF-8 whenever what the sender controls besides the
//    body (method, content type) is, so the message is never mangled;
//  - nothing the sender wrote can format the message: no < or > anywhere
//    (sent as entities), no two backticks in a row inside the code block,
//    none in the method and content type's code span;
//  - a JSON body is shown pretty-printed and parses back to the same value,
//    its numbers as written (prettyJsonText);
//  - a body cut to kMaxBodyChars keeps at most that many characters, cut
//    from the full rendering (a prefix of it), and says so;
//  - a binary body is never shown.
#include <fuzzer/FuzzedDataProvider.h>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "base/json_text.h"
#include "fuzz/fuzz_check.h"
#include "targets/slack_target.h"

namespace {

bool validUtf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

size_t codePoints(const std::string& s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

constexpr std::string_view kZeroWidthSpace = "\u200B";

// What Slack shows for escaped text: the three entities decoded.
std::string decodeEntities(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 5, "&amp;") == 0) out += '&', i += 4;
    else if (s.compare(i, 4, "&lt;") == 0) out += '<', i += 3;
    else if (s.compare(i, 4, "&gt;") == 0) out += '>', i += 3;
    else out += s[i];
  }
  return out;
}

std::string withoutZeroWidthSpaces(std::string s) {
  for (size_t at; (at = s.find(kZeroWidthSpace)) != std::string::npos;)
    s.erase(at, kZeroWidthSpace.size());
  return s;
}

// The method and content type as their code span shows them.
std::string codeSpan(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '`') out += "\u02CB";
    else out += c;
  }
  return "`" + out + "`";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  webhooker::EventPayload payload;
  payload.method = in.ConsumeRandomLengthString(16);
  payload.contentType = in.ConsumeRandomLengthString(64);
  payload.receivedAt = "2026-11-29T17:48:05.123Z";
  payload.body = in.ConsumeRemainingBytesAsString();

  const std::string text = webhooker::slackMessageText(payload);
  if (validUtf8(payload.method) && validUtf8(payload.contentType)) FUZZ_CHECK(validUtf8(text));
  // The first line names the request; what follows is about the body alone.
  const std::string header =
      "*Webhook event* " +
      codeSpan(payload.method + " " +
               (payload.contentType.empty() ? "(no content type)" : payload.contentType)) +
      " · " + payload.receivedAt + " · " + std::to_string(payload.body.size()) + " bytes\n";
  FUZZ_CHECK(text.starts_with(header));
  FUZZ_CHECK(text.find('<') == std::string::npos && text.find('>') == std::string::npos);
  const std::string rest = text.substr(header.size());
  if (payload.body.empty()) {
    FUZZ_CHECK(rest == "_(empty body)_");
    return 0;
  }
  if (!validUtf8(payload.body)) {  // not JSON either: JSON is UTF-8
    FUZZ_CHECK(rest == "_(binary body, not shown)_");
    return 0;
  }
  const size_t close = rest.rfind("\n```");
  FUZZ_CHECK(rest.starts_with("```\n") && close != std::string::npos && close >= 4);
  FUZZ_CHECK(rest.substr(4, close - 4).find("``") == std::string::npos);
  // What Slack shows, compared without zero-width spaces: the sender may
  // have written some too.
  std::string shown = withoutZeroWidthSpaces(decodeEntities(rest.substr(4, close - 4)));
  const bool cut = rest.ends_with("_(body cut to 3500 characters)_");
  const auto json = webhooker::parseJsonText(payload.body);
  const std::string full = withoutZeroWidthSpaces(
      json.is_discarded() ? payload.body : webhooker::prettyJsonText(payload.body));
  if (cut) {
    FUZZ_CHECK(shown.ends_with("\n…"));
    shown.resize(shown.size() - std::string("\n…").size());
    FUZZ_CHECK(codePoints(shown) <= webhooker::SlackTarget::kMaxBodyChars);
    FUZZ_CHECK(full.starts_with(shown) && full.size() > shown.size());
  } else {
    FUZZ_CHECK(shown == full);
    const bool senderWroteZeroWidthSpaces =
        payload.body.find(kZeroWidthSpace) != std::string::npos;
    if (!json.is_discarded() && !senderWroteZeroWidthSpaces)
      FUZZ_CHECK(nlohmann::ordered_json::parse(shown) == json);
  }
  return 0;
}
