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
  constexpr std::array<std::string_view, 3> kCredentials = {"authorization",
                                                            "proxy-authorization", "cookie"};
  return std::none_of(kCredentials.begin(), kCredentials.end(),
                      [name](std::string_view c) { return equalsIgnoringCase(name, c); });
}

}  // namespace webhooker::server
