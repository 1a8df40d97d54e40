// Console: the web console at "/" — the static HTML, CSS and JS of web/,
// compiled into the binary (scripts/embed.py) and served as they are. The
// page signs in with the admin token and reads and changes everything through
// the public admin API, so its files need no auth: they hold no data.
//
// Every console response forbids inline script and style, framing, MIME
// sniffing and referrers. Threading: register before serving; the handlers
// only read constant data.
#pragma once

#include "server/http_message.h"
#include "server/router.h"

#include <span>

#include "base/embedded_file.h"

namespace webhooker::server {

// Every file of web/, sorted by path; generated at build time.
std::span<const EmbeddedFile> consoleFiles();

// GET (and HEAD) "/" answers web/index.html; every other file is at
// "/<its path>" ("/assets/app.js").
void registerConsole(Router& router);

}  // namespace webhooker::server
