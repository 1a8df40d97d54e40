// Ids are UUIDs in canonical lowercase form. They name webhooks,
// entrypoints, targets, events and deliveries, and appear in URLs and file
// names, so anything that is not exactly this shape is refused early.
#pragma once

#include <string>
#include <string_view>

namespace webhooker {

// Thread-safe. Draws from OpenSSL's CSPRNG: entrypoint ids are capabilities
// (whoever knows one can post to it), so they must not be guessable.
std::string newUuid();

// A UUIDv7 (RFC 9562): the current Unix time in milliseconds, then 74 random
// bits. For rows written at a high rate (events, deliveries): ids made close
// in time sort close together, so a commit's new index entries land on a few
// B-tree pages instead of one random page each. Not for capabilities: its
// first 48 bits are guessable. Thread-safe, same generator as newUuid().
std::string newTimeOrderedUuid();

// True for the canonical 36-character form, lowercase or uppercase hex.
bool isUuid(std::string_view text);

// The canonical lowercase form of a valid uuid.
std::string normalizeUuid(std::string_view text);

}  // namespace webhooker
