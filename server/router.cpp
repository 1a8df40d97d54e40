#include "server/router.h"

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

void Router::add(std::string_view method, std::string pattern, Handler handler) {
  std::vector<std::string> segments = splitPath(pattern);
  routes_.push_back({std::string(method), std::move(pattern), std::move(segments),
                     std::move(handler), nullptr});
}

void Router::addAsync(std::string_view method, std::string pattern, AsyncHandler handler) {
  std::vector<std::string> segments = splitPath(pattern);
  routes_.push_back({std::string(method), std::move(pattern), std::move(segments), nullptr,
                     std::move(handler)});
}

const Router::Route* Router::match(std::string_view method, std::string_view path,
                                   std::vector<std::string>& matches) const {
  const std::string_view wanted = method == "HEAD" ? "GET" : method;
  const std::vector<std::string> segments = splitPath(path);
  for (const Route& route : routes_) {
    if (route.method != wanted || route.segments.size() != segments.size()) continue;
    matches.assign(1, std::string(path));
    bool same = true;
    for (size_t i = 0; same && i < segments.size(); ++i) {
      if (route.segments[i] == kCapture) {
        same = !segments[i].empty();
        matches.push_back(segments[i]);
      } else {
        same = route.segments[i] == segments[i];
      }
    }
    if (same) return &route;
  }
  matches.clear();
  return nullptr;
}

}  // namespace webhooker::server
