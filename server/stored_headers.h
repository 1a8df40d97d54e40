// Which request headers an event keeps. What is kept is stored in the
// webhook's events DB and forwarded to its http targets, so the sender's
// credentials for the entrypoint are not: they were meant for webhooker,
// not for the receivers (docs/security.md).
#pragma once

#include <string_view>

namespace webhooker::server {

// False for Authorization, Proxy-Authorization and Cookie (any spelling).
bool isStoredHeader(std::string_view name);

}  // namespace webhooker::server
