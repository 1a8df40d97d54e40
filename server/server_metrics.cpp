#include "server/server_metrics.h"

#include "server/inbound_verifier.h"

namespace webhooker::server {

namespace {

const prometheus::Histogram::BucketBoundaries kRequestBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

std::string statusClass(int status) {
  if (status < 100 || status > 599) return "other";
  return std::to_string(status / 100) + "xx";
}

}  // namespace

ServerMetrics::ServerMetrics(prometheus::Registry& registry)
    : eventsReceived_(prometheus::BuildCounter()
                          .Name("webhooker_events_received_total")
                          .Help("Events stored and acknowledged with 200")
                          .Register(registry)
                          .Add({})),
      requests_(prometheus::BuildCounter()
                    .Name("webhooker_http_requests_total")
                    .Help("HTTP requests served, by route pattern and status class")
                    .Register(registry)),
      verificationFailures_(prometheus::BuildCounter()
                                .Name("webhooker_ingest_verification_failures_total")
                                .Help("Inbound requests refused by signature verification")
                                .Register(registry)),
      handshakes_(prometheus::BuildCounter()
                      .Name("webhooker_ingest_handshakes_total")
                      .Help("Providers' handshakes answered at ingest (nothing stored), by "
                            "kind and outcome")
                      .Register(registry)),
      durations_(prometheus::BuildHistogram()
                     .Name("webhooker_http_request_duration_seconds")
                     .Help("Time to handle an HTTP request, by route pattern")
                     .Register(registry)),
      bufferedBytes_(prometheus::BuildGauge()
                         .Name("webhooker_http_buffered_bytes")
                         .Help("Bytes unfinished requests hold in read buffers and bodies "
                               "(capped by --max-buffered-mb)")
                         .Register(registry)
                         .Add({})),
      busyRefusalsWaiting_(prometheus::BuildGauge()
                               .Name("webhooker_http_busy_refusals_waiting")
                               .Help("Requests refused for want of buffer room (503), held "
                                     "unread until their answer is due")
                               .Register(registry)
                               .Add({})) {
  // Every reason exists at 0 from start-up, like the other series, so an
  // alert on its rate works before the first failure.
  for (const std::string_view reason : kVerificationFailureReasons)
    verificationFailures_.Add({{"reason", std::string(reason)}});
}

void ServerMetrics::eventReceived() { eventsReceived_.Increment(); }

void ServerMetrics::verificationFailed(std::string_view reason) {
  // The reasons come from a fixed set (inbound_verifier.h).
  verificationFailures_.Add({{"reason", std::string(reason)}}).Increment();
}

void ServerMetrics::handshake(std::string_view kind, bool answered) {
  // The kinds come from a fixed set (inbound_settings.h).
  handshakes_.Add({{"kind", std::string(kind)}, {"outcome", answered ? "answered" : "refused"}})
      .Increment();
}

void ServerMetrics::request(std::string_view route, int status,
                            std::chrono::duration<double> duration) {
  const std::string label(route);
  requests_.Add({{"route", label}, {"code", statusClass(status)}}).Increment();
  durations_.Add({{"route", label}}, kRequestBuckets).Observe(duration.count());
}

}  // namespace webhooker::server
