// AdminClient: one daemon's admin API over HTTP with its bearer token. The
// one client of that API in the tree: the CLI, the cluster commands, the
// benchmarks and the test daemons all call through it, so a timeout, a base
// path or the shape of an error is handled the same way everywhere.
//
// Threading: a call makes its own connection; any thread may call, and one
// AdminClient may be shared by several. Errors: only a failure to get an
// answer at all is an Error (`unavailable`, with a sentence a user can act
// on); any answer, 2xx or not, comes back as an AdminAnswer.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace webhooker::app {

struct AdminAnswer {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;

  bool ok() const { return status >= 200 && status <= 299; }
  // The body as JSON; a discarded value when it is not JSON.
  nlohmann::json json() const;
  // "message (code, HTTP 404)" from the API's {"error": {...}} shape, or
  // "HTTP 502" for an answer that is not one (a proxy's page).
  std::string errorText() const;
};

class AdminClient {
 public:
  // `url` is the daemon's address: "http[s]://host[:port]" and, behind a
  // reverse proxy, a base path ("https://example.com/webhooker").
  static Result<AdminClient> forUrl(const std::string& url, std::string token,
                                    std::chrono::seconds timeout = std::chrono::seconds(10));

  // `path` starts at the daemon's root ("/api/v1/webhooks"). A non-empty
  // `contentType` sends `body` with it.
  Result<AdminAnswer> send(const std::string& method, const std::string& path,
                           const std::string& body = {},
                           const std::string& contentType = {}) const;
  // The same with a JSON body, when there is one.
  Result<AdminAnswer> sendJson(const std::string& method, const std::string& path,
                               const std::optional<nlohmann::json>& body = std::nullopt) const;

  const std::string& url() const { return url_; }

 private:
  AdminClient(std::string url, std::string origin, std::string basePath, std::string token,
              std::chrono::seconds timeout);

  std::string url_;       // as given, for messages
  std::string origin_;    // scheme://host[:port]
  std::string basePath_;  // "" or "/prefix", no trailing slash
  std::string token_;     // never in a message
  std::chrono::seconds timeout_;
};

// Escapes one path segment (an id or a name), so a stray '/', '?' or '#' in
// it cannot reach another route.
std::string pathSegment(std::string_view raw);

}  // namespace webhooker::app
