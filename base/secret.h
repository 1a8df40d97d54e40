// Secrets: random tokens, their one-way hashes, and comparing them in
// constant time. A secret's plain text never goes to a log or a database;
// only sha256Hex(secret) is stored.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace webhooker {

// A fresh random token of `bytes` random bytes, hex-encoded, with `prefix`
// in front (e.g. "whk_"), so a leaked token is recognisable in a scan.
std::string newToken(std::string_view prefix, size_t bytes = 32);

// Lowercase hex of raw bytes.
std::string hexEncode(std::string_view bytes);

// Lowercase hex SHA-256 of the input.
std::string sha256Hex(std::string_view data);

// Standard base64 (RFC 4648, with padding).
std::string base64Encode(std::string_view data);
// Strict: the standard alphabet, padding only at the end; nullopt otherwise.
std::optional<std::string> base64Decode(std::string_view text);

// Equality whose running time depends only on the lengths, never on where
// the first difference is.
bool constantTimeEquals(std::string_view a, std::string_view b);

}  // namespace webhooker
