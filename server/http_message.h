// HttpRequest and HttpResponse: one request as a handler sees it — read
// whole, framing checked, path decoded, route captures filled in — and the
// answer it gives. Our own small value types, so that server files do not
// compile cpp-httplib's header; the member names are the ones cpp-httplib
// uses (get_header_value, matches, params, set_content, ...), which kept the
// handlers as they were (docs/decisions.md, *Front door*).
//
// Plain values: no shared state; a request is handled by one thread at a
// time. Header names compare without regard to case and keep their arrival
// order among equal names.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/form_encoding.h"
#include "server/access.h"

namespace webhooker::server {

struct CaseInsensitiveLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const;
};
using HeaderMap = std::multimap<std::string, std::string, CaseInsensitiveLess>;

struct HttpRequest {
  std::string method;  // as sent: GET, POST, ...
  std::string target;  // the request-target as sent, query included
  std::string path;    // the target's path, percent-decoded
  HeaderMap headers;   // names as sent, in arrival order
  std::multimap<std::string, std::string> params;  // query parameters, decoded
  std::string body;
  std::vector<std::string> matches;  // [0] the path, then one per {id} of the route
  // The client's address: the peer's, or from X-Forwarded-For when the peer
  // is a trusted proxy (server/client_address.h).
  std::string remote_addr;
  // Who called an /api/ route: set by the server once it is authenticated.
  Caller caller;

  bool has_header(std::string_view name) const;
  // The id-th value of `name`, "" when there is none.
  std::string get_header_value(std::string_view name, size_t id = 0) const;
  size_t get_header_value_count(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  HeaderMap headers;
  std::string body;

  // Replaces any value `name` had.
  void set_header(std::string_view name, std::string value);
  void set_content(std::string content, std::string_view contentType);
};

// How a handler that finishes later (ingest, after its commit) answers.
// Called exactly once, from any thread.
using Respond = std::function<void(HttpResponse)>;

// "a=1&b=%20" → {a: "1", b: " "}; a name without "=" has the value "".
std::multimap<std::string, std::string> parseQuery(std::string_view query);

}  // namespace webhooker::server
