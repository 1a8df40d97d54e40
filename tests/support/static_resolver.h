// StaticResolver: a Resolver answering from a table the test fills in, so
// SSRF and delivery tests never touch real DNS. Unknown names are a
// "dns_failure". Counts lookups, so a test can show a literal was never
// resolved. Thread-safe like the interface requires.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "net/resolver.h"

namespace webhooker::testing {

class StaticResolver final : public Resolver {
 public:
  // `addresses` in any IpAddress::parse spelling; a bad one is a test bug.
  void set(const std::string& host, const std::vector<std::string_view>& addresses);

  Result<std::vector<IpAddress>> resolve(const std::string& host) override;

  int lookups() const;

 private:
  mutable std::mutex mutex_;  // guards answers_ and lookups_
  std::map<std::string, std::vector<IpAddress>> answers_;
  int lookups_ = 0;
};

}  // namespace webhooker::testing
