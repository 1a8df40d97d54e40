// Providers' handshakes, answered at ingest without storing an event:
//   slack    POST {"type": "url_verification", "challenge": c}  → c (text/plain)
//   zoom     POST {"event": "endpoint.url_validation", "payload": {"plainToken": p}}
//            → {"plainToken": p, "encryptedToken": hex HMAC-SHA256(secret, p)}
//   meta     GET ?hub.mode=subscribe&hub.verify_token=t&hub.challenge=c → c
//            (text/plain), 403 handshake_refused for another token
//   twitter  GET ?crc_token=c → {"response_token": "sha256=" + base64 HMAC-SHA256(secret, c)}
//   dropbox  GET ?challenge=c → c (text/plain, X-Content-Type-Options: nosniff)
// The POST ones are signed like any event and are answered only once the
// request has passed verification. Pure functions, any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "server/http_message.h"
#include "server/inbound_settings.h"

namespace webhooker::server {

inline constexpr size_t kMaxChallenge = 2048;

struct HandshakeAnswer {
  HttpResponse response;
  bool answered = true;  // false: refused (a wrong verify token, a bad challenge)
};

// A GET to an entrypoint: nullopt when its handshake is not a GET one (the
// caller answers 405).
std::optional<HandshakeAnswer> answerHandshakeGet(
    const InboundSettings& inbound, const std::multimap<std::string, std::string>& query);

// A verified POST: nullopt when the body is not the entrypoint's handshake.
std::optional<HandshakeAnswer> answerHandshakePost(const InboundSettings& inbound,
                                                   std::string_view body);

}  // namespace webhooker::server
