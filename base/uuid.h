// Ids are random UUIDv4 in canonical lowercase form. They name webhooks,
// entrypoints, targets, events and deliveries, and appear in URLs and file
// names, so anything that is not exactly this shape is refused early.
#pragma once

#include <string>
#include <string_view>

namespace webhooker {

// Thread-safe. Draws from OpenSSL's CSPRNG: entrypoint ids are capabilities
// (whoever knows one can post to it), so they must not be guessable.
std::string newUuid();

// True for the canonical 36-character form, lowercase or uppercase hex.
bool isUuid(std::string_view text);

// The canonical lowercase form of a valid uuid.
std::string normalizeUuid(std::string_view text);

}  // namespace webhooker
