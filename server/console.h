// Console: the web console at "/" — the static HTML, CSS and JS of web/,
// compiled into the binary (scripts/embed.py) and served as they are. The
// page signs in with the admin token and reads and changes everything through
// the public admin API, so its files need no auth: they hold no data.
//
// Every console response forbids inline script and style, MIME sniffing,
// referrers and framing (but by the origins --portal-frame-ancestors names,
// so the portal can be embedded). Threading: register before serving; the handlers
// only read constant data.
#pragma once

#include "server/http_message.h"
#include "server/router.h"

#include <span>

#include "base/embedded_file.h"
#include "base/result.h"

namespace webhooker::server {

// Every file of web/, sorted by path; generated at build time.
std::span<const EmbeddedFile> consoleFiles();

// GET (and HEAD) "/" answers web/index.html; every other file is at
// "/<its path>" ("/assets/app.js"). `frameAncestors` is the CSP
// frame-ancestors value (checkFrameAncestors); other than 'none', the page
// may be framed by those origins (X-Frame-Options is then left out).
void registerConsole(Router& router, const std::string& frameAncestors = "'none'");

// --portal-frame-ancestors: 'none', or one or more of 'self', a scheme
// ("https:") and an origin ("https://app.example.com", "https://*.example.com:8443"),
// space-separated. The value to use, or invalid_config naming what is wrong.
Result<std::string> checkFrameAncestors(std::string_view value);

}  // namespace webhooker::server
