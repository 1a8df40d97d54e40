#include "server/stored_headers.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace webhooker::server {

namespace {

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

bool isStoredHeader(std::string_view name) {
  // Spelled exactly so by cpp-httplib; a sender's "remote_addr" is its own.
  constexpr std::array<std::string_view, 4> kSocket = {"REMOTE_ADDR", "REMOTE_PORT", "LOCAL_ADDR",
                                                       "LOCAL_PORT"};
  constexpr std::array<std::string_view, 3> kCredentials = {"authorization",
                                                            "proxy-authorization", "cookie"};
  if (std::find(kSocket.begin(), kSocket.end(), name) != kSocket.end()) return false;
  return std::none_of(kCredentials.begin(), kCredentials.end(),
                      [name](std::string_view c) { return equalsIgnoringCase(name, c); });
}

}  // namespace webhooker::server
