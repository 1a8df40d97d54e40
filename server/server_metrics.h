// ServerMetrics: the inbound side of /metrics — events received, and every
// HTTP request by route *pattern* and status class. Paths and ids are never
// labels: the route is the pattern the router matched ("/hooks/{id}"), or
// "other" for a request no route matches, so no request can mint a series.
// Threading: every method is safe from any thread.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
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
  // A provider's handshake answered at ingest (`kind`: slack, meta, zoom,
  // twitter, dropbox; `outcome`: answered or refused).
  void handshake(std::string_view kind, bool answered);
  // `route`: a registered pattern or Router::kUnmatched, never a path.
  void request(std::string_view route, int status, std::chrono::duration<double> duration);
  // What unfinished requests hold in memory (server/buffered_requests.h).
  prometheus::Gauge& bufferedBytes() { return bufferedBytes_; }
  // Requests refused for want of that room, held until their answer is due.
  prometheus::Gauge& busyRefusalsWaiting() { return busyRefusalsWaiting_; }

 private:
  prometheus::Counter& eventsReceived_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& verificationFailures_;
  prometheus::Family<prometheus::Counter>& handshakes_;
  prometheus::Family<prometheus::Histogram>& durations_;
  prometheus::Gauge& bufferedBytes_;
  prometheus::Gauge& busyRefusalsWaiting_;
};

}  // namespace webhooker::server
