#include "server/handshake.h"

#include <nlohmann/json.hpp>

#include "base/json_depth.h"
#include "base/secret.h"
#include "base/utf8.h"
#include "server/json_io.h"

namespace webhooker::server {

namespace {

using nlohmann::json;

HandshakeAnswer plainText(const std::string& text) {
  HandshakeAnswer out;
  out.response.status = 200;
  out.response.set_content(text, "text/plain; charset=utf-8");
  // The challenge is the sender's text: never sniffed into something else.
  out.response.set_header("X-Content-Type-Options", "nosniff");
  return out;
}

HandshakeAnswer jsonAnswer(const json& body) {
  HandshakeAnswer out;
  sendJson(out.response, 200, body);
  return out;
}

HandshakeAnswer refused(int status, std::string_view code, std::string_view message) {
  return {errorResponse(status, code, message), false};
}

// The one value of a query parameter; nullopt when absent.
std::optional<std::string> param(const std::multimap<std::string, std::string>& query,
                                 const std::string& name) {
  const auto it = query.find(name);
  if (it == query.end()) return std::nullopt;
  return it->second;
}

bool usableChallenge(const std::string& challenge) {
  return !challenge.empty() && challenge.size() <= kMaxChallenge && isValidUtf8(challenge);
}

HandshakeAnswer badChallenge(std::string_view name) {
  return refused(400, error_code::kInvalidParameter,
                 std::string(name) + " must be 1 to " + std::to_string(kMaxChallenge) +
                     " characters of UTF-8");
}

}  // namespace

std::optional<HandshakeAnswer> answerHandshakeGet(
    const InboundSettings& inbound, const std::multimap<std::string, std::string>& query) {
  switch (inbound.handshake) {
    case HandshakeKind::kMeta: {
      const auto mode = param(query, "hub.mode");
      const auto token = param(query, "hub.verify_token");
      const auto challenge = param(query, "hub.challenge");
      if (!mode || !token || !challenge)
        return refused(400, error_code::kInvalidParameter,
                       "hub.mode, hub.verify_token and hub.challenge are required");
      if (*mode != "subscribe")
        return refused(400, error_code::kInvalidParameter, "hub.mode must be subscribe");
      if (inbound.verifyToken.empty() || !constantTimeEquals(*token, inbound.verifyToken))
        return refused(403, error_code::kHandshakeRefused, "hub.verify_token does not match");
      if (!usableChallenge(*challenge)) return badChallenge("hub.challenge");
      return plainText(*challenge);
    }
    case HandshakeKind::kTwitter: {
      const auto token = param(query, "crc_token");
      if (!token) return refused(400, error_code::kInvalidParameter, "crc_token is required");
      if (!usableChallenge(*token)) return badChallenge("crc_token");
      if (!inbound.scheme || inbound.secrets.empty())
        return refused(401, error_code::kVerificationFailed,
                       "this entrypoint cannot answer until its verification is set again");
      return jsonAnswer(
          {{"response_token", "sha256=" + schemeMac(*inbound.scheme, inbound.secrets.front(),
                                                    *token)}});
    }
    case HandshakeKind::kDropbox: {
      const auto challenge = param(query, "challenge");
      if (!challenge) return refused(400, error_code::kInvalidParameter, "challenge is required");
      if (!usableChallenge(*challenge)) return badChallenge("challenge");
      return plainText(*challenge);
    }
    default: return std::nullopt;
  }
}

std::optional<HandshakeAnswer> answerHandshakePost(const InboundSettings& inbound,
                                                   std::string_view body) {
  if (inbound.handshake != HandshakeKind::kSlack && inbound.handshake != HandshakeKind::kZoom)
    return std::nullopt;
  // Most requests are events: a look for the word first, not a parse.
  const std::string_view word =
      inbound.handshake == HandshakeKind::kSlack ? "url_verification" : "endpoint.url_validation";
  if (body.find(word) == std::string_view::npos || !jsonDepthWithin(body)) return std::nullopt;
  const json message = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!message.is_object()) return std::nullopt;
  if (inbound.handshake == HandshakeKind::kSlack) {
    if (message.value("type", json()) != "url_verification") return std::nullopt;
    const json challenge = message.value("challenge", json());
    if (!challenge.is_string() || !usableChallenge(challenge.get<std::string>()))
      return badChallenge("challenge");
    return plainText(challenge.get<std::string>());
  }
  if (message.value("event", json()) != "endpoint.url_validation") return std::nullopt;
  const json payload = message.value("payload", json::object());
  const json plain = payload.is_object() ? payload.value("plainToken", json()) : json();
  if (!plain.is_string() || !usableChallenge(plain.get<std::string>()))
    return badChallenge("payload.plainToken");
  if (!inbound.scheme || inbound.secrets.empty())
    return refused(401, error_code::kVerificationFailed,
                   "this entrypoint cannot answer until its verification is set again");
  const std::string token = plain.get<std::string>();
  return jsonAnswer({{"plainToken", token},
                     {"encryptedToken", schemeMac(*inbound.scheme, inbound.secrets.front(), token)}});
}

}  // namespace webhooker::server
