#include "server/api_document.h"

#include <string>

namespace webhooker::server {

void registerApiDocument(Router& router) {
  const EmbeddedFile& document = apiDocumentFiles().front();
  router.add("GET", "/api/v1/openapi.json", [&document](const HttpRequest&, HttpResponse& res) {
    res.status = 200;
    res.set_content(std::string(document.content), "application/json");
  });
}

}  // namespace webhooker::server
