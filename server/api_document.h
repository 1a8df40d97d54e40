// The admin API's contract: docs/openapi.json (OpenAPI 3.1), compiled into
// the binary by scripts/embed.py and served as it is at
// GET /api/v1/openapi.json, behind the admin token like every /api/ route.
// tests/integration/openapi_test.cpp keeps it equal to the router's routes;
// tests/browser/openapi.test.mjs validates it and the API's answers against it.
//
// Threading: register before serving; the handler only reads constant data.
#pragma once

#include <span>

#include "base/embedded_file.h"
#include "server/router.h"

namespace webhooker::server {

// docs/openapi.json, generated at build time (one file).
std::span<const EmbeddedFile> apiDocumentFiles();

void registerApiDocument(Router& router);

}  // namespace webhooker::server
