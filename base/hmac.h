// HMAC (RFC 2104) over OpenSSL: SHA-256 for outbound webhook signatures;
// SHA-1, SHA-256 and SHA-512 for verifying what providers send.
#pragma once

#include <string>
#include <string_view>

namespace webhooker {

enum class HmacDigest { kSha1, kSha256, kSha512 };

// The raw MAC (20, 32 or 64 bytes) of `data` under `key`. Throws
// std::runtime_error only if OpenSSL fails, which is a bug or an
// out-of-memory, not bad input.
std::string hmac(HmacDigest digest, std::string_view key, std::string_view data);

inline std::string hmacSha256(std::string_view key, std::string_view data) {
  return hmac(HmacDigest::kSha256, key, data);
}

}  // namespace webhooker
