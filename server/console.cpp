#include "server/console.h"

#include <string>
#include <string_view>

#include "base/secret.h"

namespace webhooker::server {

namespace {

// Scripts, styles, images and API calls from this origin only; nothing
// inline, no plugins, no <base>, no form posts, never inside a frame.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

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

void serveFile(const EmbeddedFile& file, const std::string& etag, const HttpRequest& req,
               HttpResponse& res) {
  res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  res.set_header("X-Frame-Options", "DENY");
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

void registerConsole(Router& router) {
  for (const EmbeddedFile& file : consoleFiles()) {
    std::string route = file.path == "index.html" ? "/" : "/" + std::string(file.path);
    const std::string etag = "\"" + sha256Hex(file.content).substr(0, 16) + "\"";
    router.add("GET", std::move(route), [&file, etag](const HttpRequest& req, HttpResponse& res) {
      serveFile(file, etag, req, res);
    });
  }
}

}  // namespace webhooker::server
