// Router: which handler answers a method and path, and under which route
// pattern the request is counted in /metrics.
//
// A pattern is a path whose segments are literals or "{id}", which matches
// one non-empty segment (the handler finds it in req.matches[1], [2], ...).
// Patterns are fixed at registration, so a metrics label taken from them can
// never be minted by a caller; a request no route matches is "other".
// HEAD is answered by the GET route (the server sends no body).
//
// Threading: add() before serving; match() from any thread afterwards.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_message.h"

namespace webhooker::server {

// What a route needs of its caller: the one table of who may call which
// route (server/access.h). Outside /api/ nothing (those routes have their
// own checks); an /api/ route not in the table needs the admin token.
RouteAccess routeAccess(std::string_view method, std::string_view pattern);

class Router {
 public:
  // Answers at once; runs on the server's worker pool.
  using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;
  // Answers later, through `respond`; runs on the event loop, so it must
  // not block (ingest: its commit answers).
  using AsyncHandler = std::function<void(HttpRequest&, Respond respond)>;

  static constexpr std::string_view kUnmatched = "other";

  // `bodyLimit` 0: the server's body limit; more for a route that takes
  // larger bodies (a piece of an events DB in a move).
  void add(std::string_view method, std::string pattern, Handler handler, size_t bodyLimit = 0);
  void addAsync(std::string_view method, std::string pattern, AsyncHandler handler);

  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    Handler handler;            // one of these two is set
    AsyncHandler asyncHandler;
    size_t bodyLimit = 0;       // 0: the server's
    RouteAccess access;         // who may call it: routeAccess()
  };
  // The route for `method` and the decoded `path`, with its captures in
  // `matches`; nullptr when none matches.
  const Route* match(std::string_view method, std::string_view path,
                     std::vector<std::string>& matches) const;
  // Every route, in registration order.
  const std::vector<Route>& routes() const { return routes_; }
  // The methods some route answers at `path` ("GET, HEAD, PATCH"), in
  // registration order, for a 405's Allow header; "" when no route's pattern
  // matches the path.
  std::string allowedMethods(std::string_view path) const;

 private:
  static bool patternMatches(const Route& route, const std::vector<std::string>& segments,
                             std::vector<std::string>* captures);

  std::vector<Route> routes_;
};

}  // namespace webhooker::server
