#include "targets/redis_stream_target.h"

#include <hiredis/hiredis.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string_view>
#include <vector>

#include "targets/http_target.h"

namespace webhooker {

namespace {

struct ReplyFree {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

Reply command(redisContext* context, const std::vector<std::string_view>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (std::string_view a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  return Reply(static_cast<redisReply*>(
      redisCommandArgv(context, static_cast<int>(argv.size()), argv.data(), lengths.data())));
}

// What Redis said, cut to a size that fits a result row.
std::string replyText(const redisReply& reply) {
  return std::string(reply.str, std::min<size_t>(reply.len, 512));
}

}  // namespace

struct RedisStreamTarget::Connection {
  explicit Connection(redisContext* c) : context(c) {}
  ~Connection() {
    if (context) redisFree(context);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  redisContext* context;
};

RedisStreamTarget::RedisStreamTarget(const SsrfGuard& guard, CircuitBreakers& breakers,
                                     Random& random, const Clock& clock)
    : RetryCore(breakers, random, clock), guard_(guard) {}

RedisStreamTarget::~RedisStreamTarget() = default;

AttemptOutcome RedisStreamTarget::attempt(const DeliveryContext& ctx, const Task& task) {
  AttemptOutcome out;
  const auto* config = queueConfig<RedisStreamDeliveryConfig>(ctx, out);
  if (!config) return out;
  const BrokerAttempt sent(out);
  const auto address = vetBroker(guard_, config->address, out);
  if (!address) return out;

  // The pool key holds the credentials (in memory only): a changed password
  // never reuses a connection authenticated with the old one.
  const std::string key = address->toString() + "|" + std::to_string(config->address.url.port) +
                          "|" + config->username + "|" + config->password;
  auto connection = pool_.borrow(key);
  if (!connection) {
    redisContext* context = redisConnectWithTimeout(connectHost(*address).c_str(),
                                                    config->address.url.port,
                                                    brokerTimeval(config->timeout));
    connection = std::make_unique<Connection>(context);
    if (!context) return sent.finish(AttemptOutcome::Verdict::kRetry, "redis: out of memory");
    if (context->err)
      return sent.finish(
          AttemptOutcome::Verdict::kRetry,
          "cannot connect to " + config->address.hostPort() + ": " + context->errstr);
    redisSetTimeout(context, brokerTimeval(config->timeout));
    if (!config->password.empty()) {
      std::vector<std::string_view> auth = {"AUTH"};
      if (!config->username.empty()) auth.push_back(config->username);
      auth.push_back(config->password);
      const Reply reply = command(context, auth);
      if (!reply)
        return sent.finish(AttemptOutcome::Verdict::kRetry,
                           std::string("redis: ") + context->errstr);
      if (reply->type == REDIS_REPLY_ERROR)
        return sent.finish(AttemptOutcome::Verdict::kRetry,
                           "redis refused AUTH: " + replyText(*reply));
    }
  }

  const EventPayload& p = ctx.payload;
  nlohmann::json headers = nlohmann::json::array();
  for (const auto& [name, value] : forwardableHeaders(p.headers, false))
    headers.push_back({name, value});
  const std::string headersText =
      headers.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string type = p.eventType.value_or("");
  const std::string maxlen = config->maxlen ? std::to_string(*config->maxlen) : "";
  std::vector<std::string_view> args = {"XADD", config->stream};
  if (config->maxlen) args.insert(args.end(), {"MAXLEN", "~", maxlen});
  args.insert(args.end(), {"*", "event_id", task.eventId, "delivery_id", task.deliveryId, "type",
                           type, "content_type", p.contentType, "headers",
                           headersText, "body", p.body});
  const Reply reply = command(connection->context, args);
  if (!reply)  // the connection is broken: dropped with `connection`
    return sent.finish(AttemptOutcome::Verdict::kRetry,
                       std::string("redis: ") + connection->context->errstr);
  if (reply->type == REDIS_REPLY_ERROR) {
    pool_.giveBack(key, std::move(connection));
    return sent.finish(AttemptOutcome::Verdict::kRetry, "redis refused XADD: " + replyText(*reply));
  }
  if (reply->type != REDIS_REPLY_STRING)
    return sent.finish(AttemptOutcome::Verdict::kRetry, "redis answered XADD with no entry id");
  out.responseBody = replyText(*reply);
  pool_.giveBack(key, std::move(connection));
  return sent.finish(AttemptOutcome::Verdict::kSuccess, "");
}

}  // namespace webhooker
