// The parts of an absolute http(s) URL that delivery and validation need.
// Deliberately strict: anything odd (no host, a bad port, spaces, control
// characters) is refused rather than guessed at.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace webhooker {

struct Url {
  std::string scheme;  // "http" or "https", lowercase
  std::string userinfo;  // empty unless the URL had "user:pass@"
  std::string host;    // lowercase; IPv6 literals without brackets
  int port = 0;        // explicit or the scheme's default
  std::string target;  // path and query, at least "/"; no fragment
  bool ipv6Literal = false;
};

std::optional<Url> parseHttpUrl(std::string_view text);

}  // namespace webhooker
