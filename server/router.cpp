#include "server/router.h"

#include <algorithm>

namespace webhooker::server {

namespace {

constexpr std::string_view kCapture = "{id}";

// "/a/{id}" → {"a", "{id}"}; "/" → {}.
std::vector<std::string> splitPath(std::string_view path) {
  std::vector<std::string> out;
  if (path.empty() || path.front() != '/') return {""};  // never matches a route
  path.remove_prefix(1);
  if (path.empty()) return out;
  while (true) {
    const size_t slash = path.find('/');
    out.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos) return out;
    path.remove_prefix(slash + 1);
  }
}

// The routes a webhook-scoped token or portal session may call, each on
// its own webhook (matches[1]) only, with the scope it needs. Everything
// else under /api/ (the webhook list, creating and deleting webhooks,
// changing a webhook's settings, its tokens, the settings, placement,
// moves, the whole audit log, the API document) is the admin's.
struct AccessRow {
  std::string_view method;
  std::string_view pattern;
  Scope scope;
  std::string_view operateIfOnly = {};
};
constexpr std::string_view kWebhook = "/api/v1/webhooks/{id}";
constexpr AccessRow kWebhookRoutes[] = {
    {"GET", "", Scope::kRead},
    {"GET", "/entrypoints", Scope::kRead},
    {"POST", "/entrypoints", Scope::kManage},
    {"PATCH", "/entrypoints/{id}", Scope::kManage},
    {"DELETE", "/entrypoints/{id}", Scope::kManage},
    {"GET", "/targets", Scope::kRead},
    {"POST", "/targets", Scope::kManage},
    {"GET", "/targets/{id}", Scope::kRead},
    // Enabling or disabling a target is operate; anything else manage.
    {"PATCH", "/targets/{id}", Scope::kManage, "active state"},
    {"DELETE", "/targets/{id}", Scope::kManage},
    {"POST", "/targets/{id}/preview", Scope::kRead},
    // A pull target's consumer.
    {"POST", "/targets/{id}/lease", Scope::kOperate},
    {"POST", "/targets/{id}/ack", Scope::kOperate},
    {"POST", "/targets/{id}/nack", Scope::kOperate},
    {"POST", "/targets/{id}/extend", Scope::kOperate},
    {"GET", "/events", Scope::kRead},
    {"GET", "/events/{id}", Scope::kRead},
    {"POST", "/events/{id}/redeliver", Scope::kOperate},
    {"GET", "/deliveries", Scope::kRead},
    {"POST", "/deliveries/{id}/retry", Scope::kOperate},
    {"POST", "/replay", Scope::kOperate},
    {"GET", "/stats", Scope::kRead},
    {"GET", "/audit", Scope::kRead},
    {"POST", "/portal-links", Scope::kManage},
};

// Under /api/ but without a token: exchanging a portal link's secret for a
// session, and ending one (server/admin_portal.h).
constexpr AccessRow kOpenRoutes[] = {
    {"POST", "/api/v1/portal/session", Scope::kRead},
    {"DELETE", "/api/v1/portal/session", Scope::kRead},
};

}  // namespace

RouteAccess routeAccess(std::string_view method, std::string_view pattern) {
  if (pattern.rfind("/api/", 0) != 0) return {RouteAccess::Need::kNone, Scope::kManage, {}};
  for (const AccessRow& row : kOpenRoutes)
    if (row.method == method && row.pattern == pattern)
      return {RouteAccess::Need::kNone, Scope::kManage, {}};
  if (pattern.rfind(kWebhook, 0) == 0) {
    const std::string_view rest = pattern.substr(kWebhook.size());
    for (const AccessRow& row : kWebhookRoutes)
      if (row.method == method && row.pattern == rest)
        return {RouteAccess::Need::kWebhook, row.scope, row.operateIfOnly};
  }
  return {RouteAccess::Need::kAdmin, Scope::kManage, {}};
}

void Router::add(std::string_view method, std::string pattern, Handler handler,
                 size_t bodyLimit) {
  std::vector<std::string> segments = splitPath(pattern);
  RouteAccess access = routeAccess(method, pattern);
  routes_.push_back({std::string(method), std::move(pattern), std::move(segments),
                     std::move(handler), nullptr, bodyLimit, access});
}

void Router::addAsync(std::string_view method, std::string pattern, AsyncHandler handler) {
  std::vector<std::string> segments = splitPath(pattern);
  RouteAccess access = routeAccess(method, pattern);
  routes_.push_back({std::string(method), std::move(pattern), std::move(segments), nullptr,
                     std::move(handler), 0, access});
}

bool Router::patternMatches(const Route& route, const std::vector<std::string>& segments,
                            std::vector<std::string>* captures) {
  if (route.segments.size() != segments.size()) return false;
  for (size_t i = 0; i < segments.size(); ++i) {
    if (route.segments[i] == kCapture) {
      if (segments[i].empty()) return false;
      if (captures) captures->push_back(segments[i]);
    } else if (route.segments[i] != segments[i]) {
      return false;
    }
  }
  return true;
}

const Router::Route* Router::match(std::string_view method, std::string_view path,
                                   std::vector<std::string>& matches) const {
  const std::string_view wanted = method == "HEAD" ? "GET" : method;
  const std::vector<std::string> segments = splitPath(path);
  for (const Route& route : routes_) {
    if (route.method != wanted) continue;
    matches.assign(1, std::string(path));
    if (patternMatches(route, segments, &matches)) return &route;
  }
  matches.clear();
  return nullptr;
}

std::string Router::allowedMethods(std::string_view path) const {
  const std::vector<std::string> segments = splitPath(path);
  std::vector<std::string_view> methods;
  for (const Route& route : routes_) {
    if (!patternMatches(route, segments, nullptr)) continue;
    if (std::find(methods.begin(), methods.end(), route.method) != methods.end()) continue;
    methods.push_back(route.method);
    if (route.method == "GET") methods.push_back("HEAD");  // answered by the GET route
  }
  std::string allowed;
  for (std::string_view m : methods) allowed += (allowed.empty() ? "" : ", ") + std::string(m);
  return allowed;
}

}  // namespace webhooker::server
