#include "server/stored_headers.h"

#include <algorithm>
#include <array>

#include "base/ascii_case.h"

namespace webhooker::server {

bool isStoredHeader(std::string_view name) {
  constexpr std::array<std::string_view, 3> kCredentials = {"authorization",
                                                            "proxy-authorization", "cookie"};
  return std::none_of(kCredentials.begin(), kCredentials.end(),
                      [name](std::string_view c) { return equalsIgnoringCase(name, c); });
}

}  // namespace webhooker::server
