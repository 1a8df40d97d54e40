// HMAC-SHA256 (RFC 2104) over OpenSSL, for outbound webhook signatures.
#pragma once

#include <string>
#include <string_view>

namespace webhooker {

// The raw 32-byte MAC of `data` under `key`. Throws std::runtime_error only
// if OpenSSL fails, which is a bug or an out-of-memory, not bad input.
std::string hmacSha256(std::string_view key, std::string_view data);

}  // namespace webhooker
