#include "tests/support/static_resolver.h"

namespace webhooker::testing {

void StaticResolver::set(const std::string& host, const std::vector<std::string_view>& addresses) {
  std::vector<IpAddress> parsed;
  for (std::string_view a : addresses) parsed.push_back(IpAddress::parse(a).value());
  const std::lock_guard lock(mutex_);
  answers_[host] = std::move(parsed);
}

Result<std::vector<IpAddress>> StaticResolver::resolve(const std::string& host) {
  const std::lock_guard lock(mutex_);
  ++lookups_;
  const auto it = answers_.find(host);
  if (it == answers_.end())
    return makeError("dns_failure", "cannot resolve " + host + ": unknown name");
  return it->second;
}

int StaticResolver::lookups() const {
  const std::lock_guard lock(mutex_);
  return lookups_;
}

}  // namespace webhooker::testing
