// OAuth2 client credentials (RFC 6749 §4.4) for a target's requests: a
// bearer token from the target's token endpoint, fetched before the first
// attempt, cached until shortly before it expires, fetched again once when
// the receiver answers 401. HttpClient asks the token endpoint through its
// own send path, so the SSRF guard, pinning and the proxy apply to it as to
// any receiver.
//
// Threading: TokenCache is used by every worker at once; one fetch per
// target runs at a time (the others wait for its token).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/url.h"

namespace webhooker {

struct OAuth2Settings {
  Url tokenUrl;
  std::string clientId;
  std::string clientSecret;  // secret
  std::string scope;         // "" : none sent
  std::string audience;      // "" : none sent
  // Tells targets' tokens apart: a digest of all the above.
  std::string key;
};

// The form body and Basic credentials of a token request.
std::string tokenRequestBody(const OAuth2Settings& settings);
std::string tokenRequestAuthorization(const OAuth2Settings& settings);

// What a token endpoint's 200 answer gives: the token and its lifetime
// (expires_in; kAssumedLifetime when the answer has none), or why not.
struct TokenAnswer {
  std::string accessToken;
  std::chrono::seconds lifetime{0};
  std::string problem;  // set when unusable
};
inline constexpr std::chrono::seconds kAssumedLifetime{300};
TokenAnswer readTokenAnswer(int status, const std::string& body);

class TokenCache {
 public:
  explicit TokenCache(const Clock& clock) : clock_(clock) {}

  // The slot of one target's token; the caller holds `fetching` while it
  // fetches so concurrent attempts wait for one fetch.
  struct Slot {
    std::mutex fetching;
    Mutex mutex;
    std::string token GUARDED_BY(mutex);
    TimePoint refreshAt GUARDED_BY(mutex);
  };
  std::shared_ptr<Slot> slot(const std::string& key);

  // The cached token if it is still good now.
  std::optional<std::string> current(Slot& slot) const;
  // Keeps `token` until shortly before `lifetime` ends: a tenth of it, at
  // most 60 s, early.
  void keep(Slot& slot, const std::string& token, std::chrono::seconds lifetime) const;
  // Forgets `token` (the receiver refused it), unless a newer one replaced it.
  void drop(Slot& slot, const std::string& token) const;

 private:
  const Clock& clock_;
  Mutex mutex_;
  std::map<std::string, std::shared_ptr<Slot>> slots_ GUARDED_BY(mutex_);
};

}  // namespace webhooker
