#include "base/url.h"

#include <cctype>
#include <charconv>

namespace webhooker {

std::optional<Url> parseHttpUrl(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return std::nullopt;
  const size_t colon = s.find("://");
  if (colon == std::string_view::npos) return std::nullopt;
  Url url;
  for (char c : s.substr(0, colon))
    url.scheme.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (url.scheme != "http" && url.scheme != "https") return std::nullopt;
  s.remove_prefix(colon + 3);

  const size_t end = s.find_first_of("/?#");
  std::string_view authority = s.substr(0, end);
  std::string_view rest = end == std::string_view::npos ? std::string_view{} : s.substr(end);
  if (const size_t hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  url.target = rest.empty() || rest.front() != '/' ? "/" + std::string(rest) : std::string(rest);

  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    url.userinfo = std::string(authority.substr(0, at));
    authority.remove_prefix(at + 1);
  }
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = authority.substr(1, close - 1);
    url.ipv6Literal = true;
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return std::nullopt;
      port = after.substr(1);
    }
  } else if (const size_t c = authority.rfind(':'); c != std::string_view::npos) {
    host = authority.substr(0, c);
    port = authority.substr(c + 1);
  }
  if (host.empty()) return std::nullopt;
  for (char c : host) {
    const bool allowed = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ||
                         c == '_' || (url.ipv6Literal && (c == ':' || c == '%'));
    if (!allowed) return std::nullopt;
    url.host.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  url.port = url.scheme == "https" ? 443 : 80;
  if (!port.empty()) {
    int p = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || ptr != port.data() + port.size() || p < 1 || p > 65535)
      return std::nullopt;
    url.port = p;
  }
  return url;
}

}  // namespace webhooker
