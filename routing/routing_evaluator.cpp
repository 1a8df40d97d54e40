#include "routing/routing_evaluator.h"

#include <spdlog/spdlog.h>

#include "base/ascii_case.h"

namespace webhooker {

namespace {

Result<void> compiled(JqSandbox& sandbox, const std::string& program, std::string_view code,
                      std::string_view field) {
  if (program.empty()) return {};
  if (auto r = sandbox.compile(program); !r)
    return makeError(code, std::string(field) + ": " + r.error().message);
  return {};
}

bool truthy(const std::string& output) { return output != "false" && output != "null"; }

}  // namespace

Result<void> RoutingEvaluator::check(const EventTypeRule& rule) {
  if (rule.source != EventTypeSource::kJq) return {};
  return compiled(sandbox_, rule.expression, error_code::kInvalidEventType, "event_type.jq");
}

Result<void> RoutingEvaluator::check(const TargetRouting& routing) {
  if (auto r = compiled(sandbox_, routing.filterJq, error_code::kInvalidFilter, "filter.jq"); !r)
    return r;
  return compiled(sandbox_, routing.transformJq, error_code::kInvalidTransform, "transform.jq");
}

Result<std::optional<std::string>> RoutingEvaluator::eventType(const EventTypeRule& rule,
                                                               const HeaderList& headers,
                                                               const std::string& body,
                                                               const std::string& receivedAt,
                                                               const std::string& webhookId) {
  using Found = std::optional<std::string>;
  if (rule.source != EventTypeSource::kJq) return Found(eventTypeWithoutJq(rule, headers, body));
  auto out =
      sandbox_.run(rule.expression, jqInput(std::nullopt, headers, body, receivedAt), webhookId);
  if (!out && jq_error::isRetryable(out.error())) return out.error();
  if (!out) {
    spdlog::info("routing.event_type_failed reason={} error=\"{}\"", out.error().code,
                 out.error().message);
    return Found();
  }
  if (out->texts.empty()) return Found();
  const auto value = nlohmann::json::parse(out->texts.front(), nullptr, false);
  if (!value.is_string() || !isEventTypeValue(value.get<std::string>())) return Found();
  return Found(value.get<std::string>());
}

Result<bool> RoutingEvaluator::passes(const std::string& program, const std::string& input,
                                      const std::string& webhookId) {
  auto out = sandbox_.run(program, input, webhookId);
  if (!out) return out.error();
  return !out->texts.empty() && truthy(out->texts.front());
}

Result<TransformedBody> RoutingEvaluator::transform(const TargetRouting& routing,
                                                    const EventPayload& payload,
                                                    const std::string& webhookId) {
  auto out = sandbox_.run(routing.transformJq,
                          jqInput(payload.eventType, payload.headers, payload.body,
                                  payload.receivedAt),
                          webhookId);
  if (!out) return out.error();
  if (out->texts.size() != 1)
    return makeError(error_code::kJqError, out->texts.empty()
                                               ? "the transform gave no output"
                                               : "the transform gave several outputs");
  return TransformedBody{std::move(out->texts.front())};
}

void applyTransformedBody(EventPayload& payload, std::string body) {
  payload.body = std::move(body);
  payload.contentType = "application/json";
  // What described the body received does not describe this one.
  std::erase_if(payload.headers, [](const auto& h) {
    return equalsIgnoringCase(h.first, "Content-Type") ||
           equalsIgnoringCase(h.first, "Content-Encoding") ||
           equalsIgnoringCase(h.first, "Content-MD5") || equalsIgnoringCase(h.first, "Digest");
  });
  payload.headers.emplace_back("Content-Type", "application/json");
}

}  // namespace webhooker
