// An entrypoint's inbound settings as ingest uses them: the verification
// scheme and its secrets, the provider's handshake, and a custom response;
// read from the stored row (fail-closed) and set through the admin API
// (each bad part refused with "invalid_field" naming it).
//
// The API's shape (POST/PATCH .../entrypoints):
//   "verification": {"scheme": none | custom | <preset>, "secret" | "secrets",
//                    "tolerance_seconds", "public_url", and for custom:
//                    "header", "prefix", "separator", "signature_key",
//                    "timestamp_key", "timestamp_header", "algorithm",
//                    "encoding", "secret_format", "content"}
//   "handshake":    null | {"kind": slack | meta | zoom | twitter | dropbox,
//                           "verify_token" (meta)}
//   "response":     null | {"status": 200-299, "content_type", "body"}
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "server/inbound_verifier.h"
#include "storage/records.h"

namespace webhooker::server {

inline constexpr size_t kMaxSecrets = 3;
inline constexpr size_t kMaxResponseBody = 4096;

enum class HandshakeKind { kNone, kSlack, kMeta, kZoom, kTwitter, kDropbox };

std::string_view handshakeName(HandshakeKind kind);

struct CustomResponse {
  int status = 200;
  std::string contentType;
  std::string body;
};

struct InboundSettings {
  std::optional<SignatureScheme> scheme;  // nullopt: verification none
  std::string publicUrl;                  // "": none
  std::vector<std::string> secrets;       // newest first
  HandshakeKind handshake = HandshakeKind::kNone;
  std::string verifyToken;  // Meta's hub.verify_token
  std::optional<CustomResponse> response;
  // The stored settings cannot be read (an unknown scheme, damaged JSON):
  // every request is refused (unknown_scheme) until they are set again.
  bool unusable = false;
};

// From the stored row. Never fails: what cannot be read sets `unusable`.
InboundSettings inboundSettingsOf(const Entrypoint& entrypoint);

// Applies the "verification", "handshake" and "response" members present in
// an API body onto the entrypoint's current settings; nullopt when the body
// has none of them. Errors are "invalid_field" (or "unknown_field") naming
// the field; nothing is written.
Result<std::optional<EntrypointInbound>> applyInboundFields(const nlohmann::json& body,
                                                            const Entrypoint& current);

// The API's view: "verification_settings", "handshake" and "response"
// members (never a secret or the verify token) added to `out`.
void addInboundJson(const Entrypoint& entrypoint, nlohmann::json& out);

}  // namespace webhooker::server
