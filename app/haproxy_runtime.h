// HAProxy's runtime API on its admin socket (`stats socket PATH level
// admin`), for the routes of a cluster: one map, key → backend.
//
// replaceMap() writes the map file HAProxy loads at start (a temporary file
// renamed over it, so a reload never sees half a file) and then swaps the
// running HAProxy's copy in one step: `prepare map` makes an empty version,
// `add map @version` fills it (in pieces that fit HAProxy's buffer) and
// `commit map @version` makes it the one in use, so no request ever sees a
// half-filled map.
//
// Errors: "haproxy_unreachable" (no socket, refused), "haproxy_error" (an
// answer that is not what the command gives on success), "storage_error"
// for the map file.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace webhooker::app {

using MapEntries = std::vector<std::pair<std::string, std::string>>;  // key, value

class HaproxyRuntime {
 public:
  explicit HaproxyRuntime(std::filesystem::path socket);

  // One command (no trailing newline needed); HAProxy's whole answer.
  Result<std::string> command(const std::string& text) const;
  Result<void> replaceMap(const std::filesystem::path& mapFile, const MapEntries& entries) const;

 private:
  std::filesystem::path socket_;
};

}  // namespace webhooker::app
