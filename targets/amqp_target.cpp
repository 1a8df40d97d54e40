#include "targets/amqp_target.h"

#include <amqp.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

#include "targets/http_target.h"

namespace webhooker {

namespace {

using Stopwatch = std::chrono::steady_clock;
using Verdict = AttemptOutcome::Verdict;
using std::chrono::milliseconds;

constexpr amqp_channel_t kChannel = 1;

amqp_bytes_t bytes(const std::string& s) { return amqp_bytes_t{s.size(), const_cast<char*>(s.data())}; }

std::string text(amqp_bytes_t b) { return std::string(static_cast<const char*>(b.bytes), b.len); }

// What a failed RPC reply says, with the broker's own reason when it closed
// the channel or the connection.
std::string replyError(const amqp_rpc_reply_t& reply) {
  switch (reply.reply_type) {
    case AMQP_RESPONSE_NORMAL: return "";
    case AMQP_RESPONSE_NONE: return "no answer";
    case AMQP_RESPONSE_LIBRARY_EXCEPTION: return amqp_error_string2(reply.library_error);
    case AMQP_RESPONSE_SERVER_EXCEPTION:
      if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        const auto* m = static_cast<amqp_connection_close_t*>(reply.reply.decoded);
        return "connection closed by the broker: " + std::to_string(m->reply_code) + " " +
               text(m->reply_text);
      }
      if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const auto* m = static_cast<amqp_channel_close_t*>(reply.reply.decoded);
        return "channel closed by the broker: " + std::to_string(m->reply_code) + " " +
               text(m->reply_text);
      }
      return "the broker answered with an unexpected method";
  }
  return "unknown error";
}

// The address a connected socket reached.
std::optional<IpAddress> peerAddress(int fd) {
  sockaddr_storage peer{};
  socklen_t length = sizeof peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) return std::nullopt;
  char buffer[INET6_ADDRSTRLEN] = {};
  if (peer.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&peer)->sin_addr, buffer, sizeof buffer);
  else if (peer.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&peer)->sin6_addr, buffer, sizeof buffer);
  else
    return std::nullopt;
  auto address = IpAddress::parse(buffer);
  if (!address) return std::nullopt;
  return address->unmapped();
}

}  // namespace

struct AmqpTarget::Connection {
  Connection() : state(amqp_new_connection()) {}
  ~Connection() {
    if (open) {
      // A clean goodbye, but never a long wait for one.
      const timeval quick = brokerTimeval(milliseconds(200));
      amqp_set_rpc_timeout(state, &quick);
      amqp_channel_close(state, kChannel, AMQP_REPLY_SUCCESS);
      amqp_connection_close(state, AMQP_REPLY_SUCCESS);
    }
    amqp_destroy_connection(state);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  amqp_connection_state_t state;
  amqp_socket_t* socket = nullptr;
  bool open = false;  // logged in, channel open, confirms on
};

AmqpTarget::AmqpTarget(const SsrfGuard& guard, CircuitBreakers& breakers, Random& random,
                       const Clock& clock)
    : RetryCore(breakers, random, clock), guard_(guard) {}

AmqpTarget::~AmqpTarget() = default;

AttemptOutcome AmqpTarget::attempt(const DeliveryContext& ctx, const Task& task) {
  AttemptOutcome out;
  const auto* config = queueConfig<AmqpDeliveryConfig>(ctx, out);
  if (!config) return out;
  const EventPayload& p = ctx.payload;
  const std::string routingKey = expandTypeTemplate(config->routingKey, p.eventType.value_or(""));
  if (routingKey.size() > 255) {
    out.error = "the routing key (from the event type) is longer than 255 bytes";
    return out;
  }
  const BrokerAttempt sent(out);
  const auto deadline = sent.started() + config->timeout;
  const auto remaining = [&] {
    return std::max(milliseconds(1),
                    std::chrono::duration_cast<milliseconds>(deadline - Stopwatch::now()));
  };
  const auto address = vetBroker(guard_, config->address, out);
  if (!address) return out;

  const std::string key = address->toString() + "|" + std::to_string(config->address.url.port) +
                          "|" + config->address.url.host + "|" + config->address.vhost + "|" +
                          config->username + "|" + config->password;
  auto connection = pool_.borrow(key);
  if (!connection) {
    connection = std::make_unique<Connection>();
    amqp_connection_state_t state = connection->state;
    connection->socket =
        config->address.tls ? amqp_ssl_socket_new(state) : amqp_tcp_socket_new(state);
    if (!connection->socket) return sent.finish(Verdict::kRetry, "amqp: cannot make a socket");
    if (config->address.tls) {
      amqp_ssl_socket_set_verify_peer(connection->socket, 1);
      amqp_ssl_socket_set_verify_hostname(connection->socket, 1);
      const timeval handshake = brokerTimeval(remaining());
      amqp_set_handshake_timeout(state, &handshake);
    }
    // TLS checks the certificate against the name, so it connects by name
    // and the address it reached is vetted below; plain TCP goes to the
    // vetted address itself.
    const std::string host = config->address.tls ? config->address.url.host : connectHost(*address);
    timeval connectTimeout = brokerTimeval(remaining());
    const int opened = amqp_socket_open_noblock(connection->socket, host.c_str(),
                                                config->address.url.port, &connectTimeout);
    if (opened != AMQP_STATUS_OK)
      return sent.finish(Verdict::kRetry, "cannot connect to " + config->address.hostPort() + ": " +
                                              amqp_error_string2(opened));
    const auto peer = peerAddress(amqp_socket_get_sockfd(connection->socket));
    if (!peer) return sent.finish(Verdict::kRetry, "amqp: the connection has no peer address");
    if (const auto category = guard_.forbiddenCategory(*peer)) {
      out.verdict = Verdict::kTerminal;
      out.reason = FailureKind::kBlockedDestination;
      out.error = config->address.url.host + " reached a forbidden address (" +
                  std::string(*category) + ")";
      return out;
    }
    const timeval rpc = brokerTimeval(remaining());
    amqp_set_rpc_timeout(state, &rpc);
    const amqp_rpc_reply_t login =
        amqp_login(state, config->address.vhost.c_str(), 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
                   config->username.c_str(), config->password.c_str());
    if (login.reply_type != AMQP_RESPONSE_NORMAL)
      return sent.finish(Verdict::kRetry, "amqp login refused: " + replyError(login));
    amqp_channel_open(state, kChannel);
    if (auto r = amqp_get_rpc_reply(state); r.reply_type != AMQP_RESPONSE_NORMAL)
      return sent.finish(Verdict::kRetry, "amqp: " + replyError(r));
    amqp_confirm_select(state, kChannel);
    if (auto r = amqp_get_rpc_reply(state); r.reply_type != AMQP_RESPONSE_NORMAL)
      return sent.finish(Verdict::kRetry, "amqp: " + replyError(r));
    connection->open = true;
  }
  amqp_connection_state_t state = connection->state;

  // Properties and headers; the strings they point at live until the publish.
  const HeaderList headers = forwardableHeaders(p.headers, false);
  std::vector<amqp_table_entry_t> entries;
  const std::string deliveryHeader = "Webhooker-Delivery-Id";
  const auto addHeader = [&](const std::string& name, const std::string& value) {
    amqp_table_entry_t entry{};
    entry.key = bytes(name);
    entry.value.kind = AMQP_FIELD_KIND_UTF8;
    entry.value.value.bytes = bytes(value);
    entries.push_back(entry);
  };
  for (const auto& [name, value] : headers) addHeader(name, value);
  addHeader(deliveryHeader, task.deliveryId);
  amqp_basic_properties_t properties{};
  properties._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG |
                      AMQP_BASIC_HEADERS_FLAG;
  properties.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  properties.message_id = bytes(task.eventId);
  properties.headers = amqp_table_t{static_cast<int>(entries.size()), entries.data()};
  if (!p.contentType.empty()) {
    properties._flags |= AMQP_BASIC_CONTENT_TYPE_FLAG;
    properties.content_type = bytes(p.contentType);
  }
  if (p.eventType) {
    properties._flags |= AMQP_BASIC_TYPE_FLAG;
    properties.type = bytes(*p.eventType);
  }
  const int published =
      amqp_basic_publish(state, kChannel, bytes(config->exchange), bytes(routingKey),
                         /*mandatory=*/1, /*immediate=*/0, &properties, bytes(p.body));
  if (published != AMQP_STATUS_OK)
    return sent.finish(Verdict::kRetry,
                       std::string("amqp publish: ") + amqp_error_string2(published));

  // One publish in flight per connection: the next confirm is ours. A
  // mandatory message no queue takes comes back (basic.return, then its
  // header and body) before its ack.
  std::string returned;
  for (;;) {
    amqp_frame_t frame;
    timeval wait = brokerTimeval(remaining());
    const int got = amqp_simple_wait_frame_noblock(state, &frame, &wait);
    if (got == AMQP_STATUS_TIMEOUT)
      return sent.finish(Verdict::kRetry, "amqp: no confirm from the broker within " +
                                              std::to_string(config->timeout.count()) + " ms");
    if (got != AMQP_STATUS_OK)
      return sent.finish(Verdict::kRetry, std::string("amqp: ") + amqp_error_string2(got));
    if (frame.frame_type != AMQP_FRAME_METHOD) continue;  // a returned message's header and body
    const amqp_method_number_t id = frame.payload.method.id;
    if (id == AMQP_BASIC_RETURN_METHOD) {
      const auto* m = static_cast<amqp_basic_return_t*>(frame.payload.method.decoded);
      returned = std::to_string(m->reply_code) + " " + text(m->reply_text);
    } else if (id == AMQP_BASIC_ACK_METHOD) {
      amqp_maybe_release_buffers(state);
      pool_.giveBack(key, std::move(connection));
      if (!returned.empty())
        return sent.finish(
            Verdict::kRetry,
            "amqp: the broker returned the message as unroutable (" + returned + ")");
      return sent.finish(Verdict::kSuccess, "");
    } else if (id == AMQP_BASIC_NACK_METHOD) {
      amqp_maybe_release_buffers(state);
      pool_.giveBack(key, std::move(connection));
      return sent.finish(Verdict::kRetry, "amqp: the broker refused the message (nack)");
    } else if (id == AMQP_CHANNEL_CLOSE_METHOD || id == AMQP_CONNECTION_CLOSE_METHOD) {
      amqp_rpc_reply_t reply{};
      reply.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION;
      reply.reply = frame.payload.method;
      connection->open = false;  // the broker is done with it: no goodbye
      return sent.finish(Verdict::kRetry, "amqp: " + replyError(reply));
    }
  }
}

}  // namespace webhooker
