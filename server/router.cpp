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

}  // namespace

void Router::add(std::string_view method, std::string pattern, Handler handler,
                 size_t bodyLimit) {
  std::vector<std::string> segments = splitPath(pattern);
  routes_.push_back({std::string(method), std::move(pattern), std::move(segments),
                     std::move(handler), nullptr, bodyLimit});
}

void Router::addAsync(std::string_view method, std::string pattern, AsyncHandler handler) {
  std::vector<std::string> segments = splitPath(pattern);
  routes_.push_back({std::string(method), std::move(pattern), std::move(segments), nullptr,
                     std::move(handler)});
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
