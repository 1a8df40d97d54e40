#include "targets/nats_target.h"

#include <nats/nats.h>

#include <chrono>
#include <string>

#include "targets/http_target.h"

namespace webhooker {

namespace {

using Verdict = AttemptOutcome::Verdict;

// libnats' own account of the last failure on this thread.
std::string natsError(natsStatus status) {
  const char* text = nats_GetLastError(nullptr);
  return text && *text ? text : natsStatus_GetText(status);
}

}  // namespace

struct NatsTarget::Connection {
  ~Connection() {
    if (js) jsCtx_Destroy(js);
    if (nc) {
      natsConnection_Close(nc);
      natsConnection_Destroy(nc);
    }
  }
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
};

NatsTarget::NatsTarget(const SsrfGuard& guard, CircuitBreakers& breakers, Random& random,
                       const Clock& clock)
    : RetryCore(breakers, random, clock), guard_(guard) {}

NatsTarget::~NatsTarget() = default;

AttemptOutcome NatsTarget::attempt(const DeliveryContext& ctx, const Task& task) {
  AttemptOutcome out;
  const auto* config = queueConfig<NatsDeliveryConfig>(ctx, out);
  if (!config) return out;
  const EventPayload& p = ctx.payload;
  const std::string subject = expandTypeTemplate(config->subject, p.eventType.value_or(""));
  if (!isPublishableNatsSubject(subject)) {
    out.error = "the subject \"" + subject + "\" (from the event type) is not a valid NATS subject";
    return out;
  }
  const BrokerAttempt sent(out);
  const auto address = vetBroker(guard_, config->address, out);
  if (!address) return out;

  // Keyed by the vetted address and the credentials (in memory only).
  const std::string host = address->isV6() ? "[" + address->toString() + "]" : address->toString();
  const std::string url = std::string(config->address.tls ? "tls" : "nats") + "://" + host + ":" +
                          std::to_string(config->address.url.port);
  const std::string key = url + "|" + config->address.url.host + "|" + config->username + "|" +
                          config->password + "|" + config->token;
  std::shared_ptr<Connection> connection;
  {
    std::lock_guard lock(mutex_);
    auto it = connections_.find(key);
    if (it != connections_.end()) {
      if (natsConnection_Status(it->second->nc) == NATS_CONN_STATUS_CONNECTED)
        connection = it->second;
      else
        connections_.erase(it);
    }
  }
  if (!connection) {
    auto fresh = std::make_shared<Connection>();
    natsOptions* options = nullptr;
    natsStatus s = natsOptions_Create(&options);
    if (s == NATS_OK) s = natsOptions_SetURL(options, url.c_str());
    if (s == NATS_OK) s = natsOptions_SetName(options, "webhooker");
    if (s == NATS_OK) s = natsOptions_SetTimeout(options, config->timeout.count());
    if (s == NATS_OK) s = natsOptions_SetAllowReconnect(options, false);
    if (s == NATS_OK) s = natsOptions_SetIgnoreDiscoveredServers(options, true);
    if (s == NATS_OK && config->address.tls) {
      s = natsOptions_SetSecure(options, true);
      if (s == NATS_OK) s = natsOptions_SetExpectedHostname(options, config->address.url.host.c_str());
    }
    if (s == NATS_OK && !config->username.empty())
      s = natsOptions_SetUserInfo(options, config->username.c_str(), config->password.c_str());
    if (s == NATS_OK && !config->token.empty())
      s = natsOptions_SetToken(options, config->token.c_str());
    if (s == NATS_OK) s = natsConnection_Connect(&fresh->nc, options);
    natsOptions_Destroy(options);
    if (s != NATS_OK)
      return sent.finish(Verdict::kRetry,
                         "cannot connect to " + config->address.hostPort() + ": " + natsError(s));
    s = natsConnection_JetStream(&fresh->js, fresh->nc, nullptr);
    if (s != NATS_OK) return sent.finish(Verdict::kRetry, "nats: " + natsError(s));
    std::lock_guard lock(mutex_);
    connection = connections_.try_emplace(key, fresh).first->second;
  }

  natsMsg* message = nullptr;
  natsStatus s = natsMsg_Create(&message, subject.c_str(), nullptr, p.body.data(),
                                static_cast<int>(p.body.size()));
  for (const auto& [name, value] : forwardableHeaders(p.headers, false))
    if (s == NATS_OK) s = natsMsgHeader_Add(message, name.c_str(), value.c_str());
  if (s == NATS_OK) s = natsMsgHeader_Set(message, "Webhooker-Event-Id", task.eventId.c_str());
  if (s == NATS_OK)
    s = natsMsgHeader_Set(message, "Webhooker-Delivery-Id", task.deliveryId.c_str());
  if (s == NATS_OK && p.eventType)
    s = natsMsgHeader_Set(message, "Webhooker-Event-Type", p.eventType->c_str());
  jsPubAck* ack = nullptr;
  jsErrCode jsError = static_cast<jsErrCode>(0);
  if (s == NATS_OK) {
    jsPubOptions publish;
    jsPubOptions_Init(&publish);
    publish.MsgId = task.eventId.c_str();
    publish.MaxWait = config->timeout.count();
    s = js_PublishMsg(&ack, connection->js, message, &publish, &jsError);
  }
  natsMsg_Destroy(message);
  if (s != NATS_OK) {
    std::string error = "nats: " + natsError(s);
    if (jsError != 0) error += " (JetStream error " + std::to_string(static_cast<int>(jsError)) + ")";
    if (natsConnection_Status(connection->nc) != NATS_CONN_STATUS_CONNECTED) {
      std::lock_guard lock(mutex_);
      if (auto it = connections_.find(key); it != connections_.end() && it->second == connection)
        connections_.erase(it);
    }
    return sent.finish(Verdict::kRetry, std::move(error));
  }
  out.responseBody = std::string("stream=") + (ack->Stream ? ack->Stream : "") +
                     " seq=" + std::to_string(ack->Sequence) + (ack->Duplicate ? " duplicate" : "");
  jsPubAck_Destroy(ack);
  return sent.finish(Verdict::kSuccess, "");
}

}  // namespace webhooker
