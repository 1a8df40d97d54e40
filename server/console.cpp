#include "server/console.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "base/secret.h"

namespace webhooker::server {

namespace {

// Scripts, styles, images and API calls from this origin only; nothing
// inline, no plugins, no <base>, no form posts; framed only by the origins
// of frame-ancestors.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors ";

// A host of an origin: letters, digits, dots and dashes, maybe a leading "*.".
bool hostChars(std::string_view host) {
  if (host.rfind("*.", 0) == 0) host.remove_prefix(2);
  if (host.empty()) return false;
  for (char c : host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') return false;
  return true;
}

bool sourceExpression(std::string_view source) {
  if (source == "'self'") return true;
  if (source == "https:" || source == "http:") return true;
  size_t at = source.find("://");
  if (at == std::string_view::npos) return false;
  const std::string_view scheme = source.substr(0, at);
  if (scheme != "https" && scheme != "http") return false;
  std::string_view rest = source.substr(at + 3);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos) {
    const std::string_view port = rest.substr(colon + 1);
    const bool digits = !port.empty() && port.size() <= 5 &&
                        std::all_of(port.begin(), port.end(), [](char c) {
                          return std::isdigit(static_cast<unsigned char>(c));
                        });
    if (port != "*" && !(digits && std::stoi(std::string(port)) <= 65535)) return false;
    rest = rest.substr(0, colon);
  }
  return hostChars(rest);
}

std::string_view contentTypeFor(std::string_view path) {
  const auto endsWith = [path](std::string_view suffix) {
    return path.size() >= suffix.size() && path.substr(path.size() - suffix.size()) == suffix;
  };
  if (endsWith(".html")) return "text/html; charset=utf-8";
  if (endsWith(".css")) return "text/css; charset=utf-8";
  if (endsWith(".js")) return "text/javascript; charset=utf-8";
  if (endsWith(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

void serveFile(const EmbeddedFile& file, const std::string& etag, const std::string& policy,
               bool framed, const HttpRequest& req, HttpResponse& res) {
  res.set_header("Content-Security-Policy", policy);
  if (!framed) res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cross-Origin-Opener-Policy", "same-origin");
  // Revalidated on every load, so a new binary's console is picked up at once.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("ETag", etag);
  if (req.get_header_value("If-None-Match") == etag) {
    res.status = 304;
    return;
  }
  res.status = 200;
  res.set_content(std::string(file.content), std::string(contentTypeFor(file.path)));
}

}  // namespace

Result<std::string> checkFrameAncestors(std::string_view value) {
  std::vector<std::string_view> sources;
  for (size_t at = 0; at < value.size();) {
    const size_t end = std::min(value.find(' ', at), value.size());
    if (end > at) sources.push_back(value.substr(at, end - at));
    at = end + 1;
  }
  if (sources.size() == 1 && sources[0] == "'none'") return std::string("'none'");
  if (sources.empty())
    return makeError(error_code::kInvalidConfig, "--portal-frame-ancestors is empty; 'none' forbids framing");
  std::string out;
  for (std::string_view source : sources) {
    if (!sourceExpression(source))
      return makeError(error_code::kInvalidConfig,
                       "--portal-frame-ancestors: \"" + std::string(source) +
                           "\" is not 'self', a scheme (https:) or an origin "
                           "(https://app.example.com); 'none' stands alone");
    out += (out.empty() ? "" : " ") + std::string(source);
  }
  return out;
}

void registerConsole(Router& router, const std::string& frameAncestors) {
  const std::string policy = kContentSecurityPolicy + frameAncestors;
  const bool framed = frameAncestors != "'none'";
  for (const EmbeddedFile& file : consoleFiles()) {
    std::string route = file.path == "index.html" ? "/" : "/" + std::string(file.path);
    const std::string etag = "\"" + sha256Hex(file.content).substr(0, 16) + "\"";
    router.add("GET", std::move(route),
               [&file, etag, policy, framed](const HttpRequest& req, HttpResponse& res) {
                 serveFile(file, etag, policy, framed, req, res);
               });
  }
}

}  // namespace webhooker::server
