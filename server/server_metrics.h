// ServerMetrics: the inbound side of /metrics — events received, and every
// HTTP request by route *pattern* and status class. Paths and ids are never
// labels: /hooks/<uuid> is counted as "/hooks/{id}", and a path outside the
// known routes as "other", so no request can mint a series.
// Threading: every method is safe from any thread.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <string>
#include <string_view>

namespace webhooker::server {

class ServerMetrics {
 public:
  explicit ServerMetrics(prometheus::Registry& registry);

  // An event stored and acknowledged (duplicates are not counted).
  void eventReceived();
  // An inbound request refused by its entrypoint's signature check.
  void verificationFailed(std::string_view reason);
  void request(std::string_view path, int status, std::chrono::duration<double> duration);

  // "/api/v1/webhooks/3f…/targets" → "/api/v1/webhooks/{id}/targets".
  static std::string routeOf(std::string_view path);

 private:
  prometheus::Counter& eventsReceived_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& verificationFailures_;
  prometheus::Family<prometheus::Histogram>& durations_;
};

}  // namespace webhooker::server
