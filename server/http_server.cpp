// With server/request_parser.cpp, the only files that include Asio and
// Beast: they are header-only and slow to compile, so nothing else sees them
// (docs/decisions.md, *Front door*).
#include "server/http_server.h"

#include <fmt/format.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "base/mutex.h"
#include "base/secret.h"
#include "base/thread_name.h"
#include "server/access_control.h"
#include "server/admin_access.h"
#include "server/admin_api.h"
#include "server/admin_portal.h"
#include "server/admin_token.h"
#include "server/buffered_requests.h"
#include "server/client_address.h"
#include "server/api_document.h"
#include "server/console.h"
#include "server/json_io.h"
#include "server/admin_move.h"
#include "server/admin_placement.h"
#include "server/admin_summary.h"
#include "server/move_fence.h"
#include "server/request_parser.h"
#include "server/router.h"
#include "server/server_metrics.h"

namespace webhooker::server {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// The admin pool's threads; the naming jobs count on exactly this many.
size_t adminThreads(const ServerOptions& options) {
  return static_cast<size_t>(std::max(options.threads, 1));
}

// How long, and how many bytes, a closing connection still reads (and
// drops) of what the client sends, so that an answer given before its body
// was read is not lost to a reset: a body up to the default limit, not a
// stream at whatever rate the client can send.
constexpr auto kLinger = std::chrono::seconds(2);
constexpr size_t kLingerBytes = size_t{1} << 20;
// The methods a route can have; anything else is a bad request, as it was.
constexpr std::array<std::string_view, 7> kMethods = {"GET",    "HEAD",    "POST", "PUT",
                                                      "DELETE", "OPTIONS", "PATCH"};

// Basic auth for /metrics: both parts compared as hashes, in constant time.
bool basicAuthMatches(const std::string& header, const std::string& user,
                      const std::string& password) {
  constexpr std::string_view kBasic = "Basic ";
  if (header.size() <= kBasic.size() || header.compare(0, kBasic.size(), kBasic) != 0) return false;
  const auto decoded = base64Decode(std::string_view(header).substr(kBasic.size()));
  if (!decoded) return false;
  const size_t colon = decoded->find(':');
  if (colon == std::string::npos) return false;
  const bool userOk = constantTimeEquals(sha256Hex(decoded->substr(0, colon)), sha256Hex(user));
  const bool passwordOk =
      constantTimeEquals(sha256Hex(decoded->substr(colon + 1)), sha256Hex(password));
  return userOk && passwordOk;
}

// Over the cap of bytes buffered for unfinished requests.
HttpResponse serverBusy() {
  HttpResponse busy = errorResponse(503, error_code::kServerBusy,
                                    "the server holds too many unfinished requests; retry shortly");
  busy.set_header("Retry-After", "1");
  return busy;
}

// The peer's address as the SSRF vocabulary spells it; an IPv4-mapped IPv6
// peer (a dual-stack listener) is its IPv4 address.
IpAddress peerAddress(const tcp::endpoint& endpoint) {
  const asio::ip::address a = endpoint.address();
  if (a.is_v4()) return IpAddress::fromV4Bytes(a.to_v4().to_bytes());
  return IpAddress::fromV6Bytes(a.to_v6().to_bytes()).unmapped();
}

// A scoped caller refused by the access rules: not in the audit log (a
// refusal changes nothing), so here.
void logRefusal(const HttpRequest& req, std::string_view route, int status) {
  spdlog::info("admin.refused actor={} actor_id={} method={} route={} status={}",
               req.caller.actor(), req.caller.id, req.method, route, status);
}

class Connection;

}  // namespace

class HttpServer::Impl {
 public:
  Impl(ServerOptions options, ServerParts parts);

  Result<int> bind();
  void run();
  void stop();

  // --- Used by connections, on the loop thread unless said otherwise. ---

  // The checks between a complete head and its body: framing, who may call,
  // which route. An answer when the request ends here.
  std::optional<HttpResponse> admit(const RequestParser& parser, HttpRequest& req,
                                    const Router::Route*& route);
  // Runs the route's handler (on the loop or the worker pool); the answer
  // comes back to `respond`.
  void handle(const Router::Route& route, HttpRequest& req, Respond respond);
  void counted(std::string_view route, int status, Clock::duration took) {
    metrics_.request(route, status, took);
  }
  // Releases a connection's place in the caps; any thread.
  void released(const std::string& address, bool capped);

  prometheus::Gauge& busyRefusalsWaiting() { return metrics_.busyRefusalsWaiting(); }

  void setAccepting(bool accepting) { ingest_.setAccepting(accepting); }
  const Router& router() const { return router_; }
  BufferedRequests& buffered() { return buffered_; }

  const ServerOptions options_;

 private:
  void registerRoutes();
  void readyz(HttpResponse& res);
  // Whether the main DB took a write at the last probe; probes at most once
  // per kProbeEvery, since /readyz needs no token and a probe is an fsync.
  bool storageWritable();
  void metrics(const HttpRequest& req, HttpResponse& res);
  void accept();
  // False (and nothing counted) when `address` is over a cap.
  bool reserved(const std::string& address, bool capped);

  ServerMetrics metrics_;
  MainStore& store_;
  prometheus::Registry& registry_;
  const AccessControl access_;
  MoveFence moveFence_;  // shared by the admin writes and the moves
  AdminApi admin_;
  PlacementApi placement_;
  NodeSummaryApi summary_;
  MoveApi move_;
  AccessApi accessApi_;
  PortalApi portal_;
  Router router_;

  static constexpr std::chrono::seconds kProbeEvery{1};
  Mutex probeMutex_;
  std::optional<std::chrono::steady_clock::time_point> lastProbe_ GUARDED_BY(probeMutex_);
  bool lastProbeOk_ GUARDED_BY(probeMutex_) = false;

  std::mutex countsMutex_;  // guards open_ and openFrom_
  size_t open_ = 0;
  std::map<std::string, size_t> openFrom_;
  // Loop thread only; outlives the connections io_ destroys.
  BufferedRequests buffered_;

  // Declared after everything its queued handlers use: destroying it
  // destroys them (and the connections they hold).
  asio::io_context io_{1};
  std::optional<tcp::acceptor> acceptor_;
  asio::steady_timer acceptPause_{io_};
  // Joined (and what it still holds destroyed) before the rest goes.
  asio::thread_pool workers_;
  std::atomic<bool> stopRequested_{false};
  // Last, so destroyed first: it waits for the requests parked on their
  // commit, whose answers still go through io_.
  IngestHandler ingest_;
};

namespace {

// One client connection: reads a request whole, within its deadlines, hands
// it to the server, writes the answer, and reads the next one (pipelined or
// keep-alive) only after that, so answers go out in order. Lives as long as
// an operation or a handler holds it; every member is used on the loop
// thread only.
class Connection final : public std::enable_shared_from_this<Connection>,
                         public BufferedRequests::Holder {
 public:
  Connection(HttpServer::Impl& server, tcp::socket socket, IpAddress peer, bool capped)
      : server_(server),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        peer_(peer),
        capKey_(connectionCapKey(peer)),
        capped_(capped) {}
  ~Connection() {
    if (refusalWaiting_) server_.busyRefusalsWaiting().Decrement();
    server_.buffered().release(*this);
    server_.released(capKey_, capped_);
  }

  void start() { readHead(); }

 private:
  enum class Phase { kIdle, kHead, kBody, kHandling, kWriting, kClosing };
  // Why the connection's operations were cancelled.
  enum class Cut { kNone, kDeadline, kStall, kMemory };

  const ServerOptions& options() const { return server_.options_; }

  // The deadline of the phase in progress: when it passes, the socket's
  // operations are cancelled and their handler sees cut_ (`why`).
  void arm(Clock::time_point deadline, Cut why = Cut::kDeadline) {
    timer_.expires_at(deadline);
    timer_.async_wait([weak = weak_from_this(), generation = ++timerGeneration_,
                       why](const beast::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self || generation != self->timerGeneration_) return;
      self->stopWith(why);
    });
  }

  void stopWith(Cut why) {
    cut_ = why;
    beast::error_code ignored;
    socket_.cancel(ignored);
  }

  // Over the cap of buffered bytes, this request was the one silent longest.
  void cut() override { stopWith(Cut::kMemory); }

  // Between requests: wait for a byte without holding a buffer.
  void waitIdle() {
    if (buffer_.size() > 0) return readHead();  // a pipelined request is here
    phase_ = Phase::kIdle;
    buffer_.shrink_to_fit();
    arm(Clock::now() + options().idleTimeout);
    socket_.async_wait(tcp::socket::wait_read,
                       [self = shared_from_this()](const beast::error_code& ec) {
                         if (ec) return self->close();
                         self->readHead();
                       });
  }

  void readHead() {
    phase_ = Phase::kHead;
    started_ = Clock::now();
    parser_.emplace();
    parse();
  }

  // Hands the parser what is buffered; then the phase's next step, or a
  // read for more.
  void parse() {
    beast::error_code ec;
    while (buffer_.size() > 0 && !phaseDone()) {
      const size_t used = parser_->feed(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec || used == 0) break;
    }
    if (ec && ec != http::error::need_more) {
      keepAlive_ = false;
      return answer(parser_->refusal(ec));
    }
    if (!phaseDone()) return readMore();
    if (phase_ == Phase::kHead) return headDone();
    dispatch();
  }

  bool phaseDone() const {
    return phase_ == Phase::kHead ? parser_->is_header_done() : parser_->is_done();
  }

  // One read, within the phase's deadline and the stall limit, of at most
  // what the parser lets us buffer.
  void readMore() {
    const auto now = Clock::now();
    // A body may take bodyGrace, and then must keep coming at minBodyRate
    // on average; only its data buys time, never its framing.
    const auto deadline =
        phase_ == Phase::kHead
            ? started_ + options().headerTimeout
            : bodyStarted_ + options().bodyGrace +
                  std::chrono::milliseconds(parser_->bodyBytesRead() * 1000 /
                                            std::max<size_t>(options().minBodyRate, 1));
    const auto stall = now + options().stallTimeout;
    if (stall < deadline)
      arm(stall, Cut::kStall);
    else
      arm(deadline);
    // Beast's read size: the free room, at least 512 bytes, within what the
    // parser lets us buffer (it refused the request when that was full).
    assert(buffer_.size() < parser_->bufferLimit());
    const size_t room = parser_->bufferLimit() - buffer_.size();
    const size_t size =
        std::min(std::max<size_t>(512, buffer_.capacity() - buffer_.size()), room);
    socket_.async_read_some(buffer_.prepare(size), [self = shared_from_this()](
                                                       const beast::error_code& ec, size_t n) {
      self->buffer_.commit(n);
      // A cut may have come after this read completed, before it ran.
      if (ec || self->cut_ != Cut::kNone) return self->failed();
      self->server_.buffered().hold(*self, self->bytesHeld());
      self->parse();
    });
  }

  size_t bytesHeld() const { return buffer_.capacity() + parser_->bodyBytesHeld(); }

  void headDone() {
    req_ = parser_->takeHead();
    std::vector<std::string> forwardedFor;
    for (auto [it, end] = req_.headers.equal_range("X-Forwarded-For"); it != end; ++it)
      forwardedFor.push_back(it->second);
    const std::string_view target = req_.target;
    const size_t mark = target.find('?');
    req_.path = decodeUrl(target.substr(0, mark), false);
    if (mark != std::string_view::npos) req_.params = parseQuery(target.substr(mark + 1));
    req_.remote_addr = clientAddress(peer_, forwardedFor, options().trustedProxies);
    keepAlive_ = parser_->keep_alive();

    if (auto refused = server_.admit(*parser_, req_, route_)) return answer(std::move(*refused));
    // RFC 9112 §6.3: without Content-Length or chunked there is no body. An
    // event must say how long it is: 411, and the connection is closed.
    if (route_->asyncHandler && req_.method == "POST" && !parser_->content_length() &&
        !parser_->chunked()) {
      keepAlive_ = false;
      return answer(errorResponse(411, error_code::kLengthRequired,
                                  "an event needs a Content-Length (or a chunked body)"));
    }
    const size_t limit = route_->bodyLimit ? route_->bodyLimit : options().ingest.bodyLimit;
    const uint64_t declared = parser_->content_length().value_or(0);
    if (declared > limit)
      return answer(errorResponse(413, error_code::kBodyTooLarge,
                                  "the body is larger than the limit of " +
                                      std::to_string(limit) + " bytes"));
    // A body is admitted at its declared size (a chunked one is counted as
    // it grows), making room by cutting requests silent for a fifth of the
    // stall limit or holding more than it asks: a flood of big or stalled
    // bodies gives way to a small one that comes.
    const size_t room = RequestParser::kMaxFramingLine;
    if (!parser_->is_done()) {
      const size_t wanted = std::max(buffer_.capacity(), room) + declared;
      if (!server_.buffered().admit(*this, wanted)) return refuseBusy();
    }
    parser_->setBodyLimit(limit);
    // A declared length sizes the room (a chunked body gets it all); an idle
    // connection gives it back (waitIdle).
    buffer_.reserve(std::min<uint64_t>(parser_->content_length().value_or(room), room));
    bodyStarted_ = Clock::now();
    phase_ = Phase::kBody;
    // A client that asked (curl does for bodies over 1 KiB) sends its body
    // only after this, or after waiting a second for it.
    if (!parser_->is_done() &&
        beast::iequals(req_.get_header_value("Expect"), std::string_view("100-continue"))) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      arm(bodyStarted_ + options().bodyGrace);
      return asio::async_write(socket_, asio::buffer(kContinue),
                               [self = shared_from_this()](const beast::error_code& ec, size_t) {
                                 if (ec || self->cut_ != Cut::kNone) return self->close();
                                 self->parse();
                               });
    }
    parse();
  }

  // No room for this body: 503 after busyRefusalDelay, reading nothing
  // and holding no buffer meanwhile, then closed without the linger
  // (reading what a flood still sends is what a server over its memory cap
  // cannot afford). A flood that reopens as soon as it is closed thus costs
  // an accept and a refusal per connection per delay, not per round trip
  // (a 1,000-connection flood came back ~4,000 times a second).
  void refuseBusy() {
    cut_ = Cut::kMemory;
    keepAlive_ = false;
    phase_ = Phase::kHandling;
    server_.buffered().release(*this);
    buffer_.consume(buffer_.size());
    buffer_.shrink_to_fit();
    refusalWaiting_ = true;
    server_.busyRefusalsWaiting().Increment();
    ++timerGeneration_;  // the phase's deadline no longer applies
    timer_.expires_after(options().busyRefusalDelay);
    timer_.async_wait([self = shared_from_this()](const beast::error_code&) {
      self->refusalWaiting_ = false;
      self->server_.busyRefusalsWaiting().Decrement();
      self->answer(serverBusy());
    });
  }

  void dispatch() {
    phase_ = Phase::kHandling;
    timer_.cancel();
    server_.buffered().release(*this);
    req_.body = parser_->takeBody();
    server_.handle(*route_, req_, [self = shared_from_this()](HttpResponse res) {
      const auto executor = self->socket_.get_executor();
      asio::post(executor, [self = std::move(self), res = std::move(res)]() mutable {
        self->answer(std::move(res));
      });
    });
  }

  // A read failed or was cut: the client left (a message cut short is no
  // request) or the socket failed, and there is nothing to answer; or a
  // deadline passed or room was needed, and the answer says which.
  void failed() {
    if (cut_ == Cut::kNone) return close();
    if (phase_ == Phase::kHead && !parser_->got_some() && buffer_.size() == 0)
      return close();  // nothing was sent: nothing to answer
    keepAlive_ = false;
    answer(cutAnswer());
  }

  HttpResponse cutAnswer() const {
    if (cut_ == Cut::kMemory) return serverBusy();
    if (cut_ == Cut::kStall)
      return errorResponse(408, error_code::kRequestTimeout,
                           fmt::format("no byte of the request came for {} ms",
                                       options().stallTimeout.count()));
    if (phase_ == Phase::kBody)
      return errorResponse(408, error_code::kRequestTimeout,
                           fmt::format("the body came slower than {} bytes a second",
                                       options().minBodyRate));
    return errorResponse(408, error_code::kRequestTimeout,
                         fmt::format("the request head did not arrive within {} ms",
                                     options().headerTimeout.count()));
  }

  void answer(HttpResponse res) {
    phase_ = Phase::kWriting;
    server_.buffered().release(*this);
    // A request whose body is still unread cannot be followed by another.
    if (!parser_ || !parser_->is_done()) keepAlive_ = false;
    const bool head = req_.method == "HEAD";
    const bool bodyless = res.status == 204 || res.status == 304 || res.status < 200;
    head_ = fmt::format("HTTP/1.1 {} {}\r\n", res.status,
                        std::string_view(http::obsolete_reason(http::int_to_status(
                            static_cast<unsigned>(res.status)))));
    for (const auto& [name, value] : res.headers) head_ += fmt::format("{}: {}\r\n", name, value);
    head_ += "X-Content-Type-Options: nosniff\r\n";
    if (!bodyless) head_ += fmt::format("Content-Length: {}\r\n", res.body.size());
    head_ += keepAlive_ ? "\r\n" : "Connection: close\r\n\r\n";
    res_ = std::move(res);
    server_.counted(route_ ? std::string_view(route_->pattern) : Router::kUnmatched, res_.status,
                    Clock::now() - started_);
    const std::array<asio::const_buffer, 2> out = {
        asio::buffer(head_), head || bodyless ? asio::const_buffer() : asio::buffer(res_.body)};
    arm(Clock::now() + options().bodyGrace +
        std::chrono::milliseconds(res_.body.size() * 1000 /
                                  std::max<size_t>(options().minBodyRate, 1)));
    asio::async_write(socket_, out,
                      [self = shared_from_this()](const beast::error_code& ec, size_t) {
                        if (ec || !self->keepAlive_) return self->close();
                        self->next();
                      });
  }

  void next() {
    req_ = HttpRequest{};
    res_ = HttpResponse{};
    route_ = nullptr;
    parser_.reset();
    cut_ = Cut::kNone;
    waitIdle();
  }

  // Sends FIN, then reads and drops what still comes for kLinger, at most
  // kLingerBytes, so the client reads our answer before a reset could
  // overtake it.
  void close() {
    if (phase_ == Phase::kClosing) return;
    phase_ = Phase::kClosing;
    server_.buffered().release(*this);
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    if (cut_ != Cut::kNone) {  // a deadline passed, or room was needed: no more time for it
      socket_.close(ignored);
      return;
    }
    arm(Clock::now() + kLinger);
    drain();
  }

  void drain() {
    buffer_.consume(buffer_.size());
    socket_.async_read_some(buffer_.prepare(RequestParser::kMaxFramingLine),
                            [self = shared_from_this()](const beast::error_code& ec, size_t n) {
                              beast::error_code ignored;
                              self->drained_ += n;
                              if (!ec && self->drained_ < kLingerBytes) return self->drain();
                              self->socket_.close(ignored);
                            });
  }

  HttpServer::Impl& server_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  uint64_t timerGeneration_ = 0;
  Cut cut_ = Cut::kNone;
  const IpAddress peer_;
  const std::string capKey_;
  const bool capped_;  // counted against the per-address cap

  Phase phase_ = Phase::kHead;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  Clock::time_point started_;
  Clock::time_point bodyStarted_;
  HttpRequest req_;
  const Router::Route* route_ = nullptr;
  bool keepAlive_ = true;
  bool refusalWaiting_ = false;  // counted in busyRefusalsWaiting until answered
  size_t drained_ = 0;  // bytes dropped while closing
  std::string head_;
  HttpResponse res_;
};

}  // namespace

HttpServer::Impl::Impl(ServerOptions options, ServerParts parts)
    : options_(std::move(options)),
      metrics_(parts.registry),
      store_(parts.store),
      registry_(parts.registry),
      access_(parts.store),
      moveFence_(parts.store),
      admin_(parts.store, parts.eventsDbs, parts.dispatcher, parts.guard, parts.breakers,
             moveFence_, parts.routing, parts.operationalEvents, parts.attempts),
      placement_(parts.store, options_.nodeId),
      summary_(parts.store, parts.breakers, parts.sampler),
      move_(parts.store, parts.eventsDbs, parts.dispatcher, moveFence_, options_.db,
            options_.nodeId),
      accessApi_(parts.store),
      portal_(parts.store, options_.portalLinkLifetime),
      buffered_(options_.maxBufferedBytes, options_.stallTimeout / 5, metrics_.bufferedBytes()),
      workers_(adminThreads(options_)),
      ingest_(parts.store, parts.eventsDbs, parts.dispatcher, metrics_, moveFence_, options_.ingest,
              {parts.routing, parts.routingMetrics}) {
  // One naming job per pool thread: each waits for the others, so no
  // thread takes two. Shared, as the last job may still be leaving its
  // wait when this constructor has gone on.
  const size_t threads = adminThreads(options_);
  const auto named = std::make_shared<std::latch>(static_cast<std::ptrdiff_t>(threads));
  for (size_t i = 0; i < threads; ++i)
    asio::post(workers_, [named] {
      nameThisThread("wh-admin");
      named->arrive_and_wait();
    });
  named->wait();
  registerRoutes();
}

void HttpServer::Impl::registerRoutes() {
  router_.addAsync("POST", "/hooks/{id}", [this](HttpRequest& req, Respond respond) {
    ingest_.handle(req, std::move(respond));
  });
  router_.addAsync("GET", "/hooks/{id}", [this](HttpRequest& req, Respond respond) {
    ingest_.handleGet(req, std::move(respond));
  });
  router_.add("GET", "/healthz", [](const HttpRequest&, HttpResponse& res) {
    sendJson(res, 200, {{"status", "ok"}});
  });
  router_.add("GET", "/readyz", [this](const HttpRequest&, HttpResponse& res) { readyz(res); });
  router_.add("GET", "/metrics",
              [this](const HttpRequest& req, HttpResponse& res) { metrics(req, res); });
  admin_.registerRoutes(router_);
  placement_.registerRoutes(router_);
  summary_.registerRoutes(router_);
  move_.registerRoutes(router_);
  accessApi_.registerRoutes(router_);
  portal_.registerRoutes(router_);
  registerConsole(router_, options_.portalFrameAncestors);
  registerApiDocument(router_);
}

std::optional<HttpResponse> HttpServer::Impl::admit(const RequestParser& parser, HttpRequest& req,
                                                    const Router::Route*& route) {
  route = router_.match(req.method, req.path, req.matches);
  if (std::find(kMethods.begin(), kMethods.end(), req.method) == kMethods.end())
    return errorResponse(400, error_code::kBadRequest, "unknown method");
  if (auto refused = parser.refusedHead(req)) return refused;
  // Authenticates every admin request before its body is read, so an
  // unknown route or method says nothing to a caller without the token.
  // A scoped caller is then held to its webhook and scope (routeAccess).
  const bool api = req.path.rfind("/api/", 0) == 0 &&
                   !(route && route->access.need == RouteAccess::Need::kNone);
  if (api) {
    req.caller = access_.authenticate(req);
    if (req.caller.kind == Caller::Kind::kNone) {
      HttpResponse res = errorResponse(
          401, error_code::kUnauthorized,
          "a valid admin or webhook token is required (Authorization: Bearer)");
      res.set_header("WWW-Authenticate", "Bearer");
      return res;
    }
    if (route)
      if (auto refused = access_.refusal(route->access, req)) {
        logRefusal(req, route->pattern, refused->status);
        return refused;
      }
  }
  if (route) return std::nullopt;
  // Refused before any body is read: a known path with another method is
  // 405 with the methods it has (RFC 9110 §15.5.6), anything else 404.
  if (const std::string allowed = router_.allowedMethods(req.path); !allowed.empty()) {
    HttpResponse res = errorResponse(405, error_code::kMethodNotAllowed,
                                     req.method + " is not allowed here; allowed: " + allowed);
    res.set_header("Allow", allowed);
    return res;
  }
  return errorResponse(404, error_code::kNotFound, "no such route");
}

void HttpServer::Impl::handle(const Router::Route& route, HttpRequest& req, Respond respond) {
  if (route.asyncHandler) return route.asyncHandler(req, std::move(respond));
  asio::post(workers_, [this, &route, &req, respond = std::move(respond)] {
    if (auto refused = access_.bodyRefusal(route.access, req)) {
      logRefusal(req, route.pattern, refused->status);
      return respond(std::move(*refused));
    }
    HttpResponse res;
    try {
      route.handler(req, res);
    } catch (const std::exception& e) {
      spdlog::error("http.handler_failed method={} path={} error=\"{}\"", req.method, req.path,
                    e.what());
      res = errorResponse(500, error_code::kInternalError, "internal error");
    }
    recordAudit(store_, route, req, res);
    respond(std::move(res));
  });
}

void HttpServer::Impl::readyz(HttpResponse& res) {
  if (!ingest_.accepting()) return sendJson(res, 503, {{"status", "shutting_down"}});
  if (!storageWritable()) return sendJson(res, 503, {{"status", "storage_unavailable"}});
  sendJson(res, 200, {{"status", "ready"}});
}

bool HttpServer::Impl::storageWritable() {
  MutexLock lock(probeMutex_);
  const auto now = std::chrono::steady_clock::now();
  if (!lastProbe_ || now - *lastProbe_ >= kProbeEvery) {
    lastProbeOk_ = store_.ping().ok();
    lastProbe_ = now;
  }
  return lastProbeOk_;
}

void HttpServer::Impl::metrics(const HttpRequest& req, HttpResponse& res) {
  if (!options_.metricsUsername.empty() &&
      !basicAuthMatches(req.get_header_value("Authorization"), options_.metricsUsername,
                        options_.metricsPassword)) {
    res.set_header("WWW-Authenticate", "Basic realm=\"webhooker metrics\"");
    return sendError(res, 401, error_code::kUnauthorized, "metrics require basic auth");
  }
  res.status = 200;
  res.set_content(prometheus::TextSerializer().Serialize(registry_.Collect()),
                  "text/plain; version=0.0.4; charset=utf-8");
}

bool HttpServer::Impl::reserved(const std::string& address, bool capped) {
  std::lock_guard lock(countsMutex_);
  if (open_ >= options_.maxConnections) return false;
  if (capped) {
    size_t& from = openFrom_[address];
    if (from >= options_.maxConnectionsPerAddress) {
      if (from == 0) openFrom_.erase(address);
      return false;
    }
    ++from;
  }
  ++open_;
  return true;
}

void HttpServer::Impl::released(const std::string& address, bool capped) {
  std::lock_guard lock(countsMutex_);
  --open_;
  if (!capped) return;
  if (auto it = openFrom_.find(address); it != openFrom_.end() && --it->second == 0)
    openFrom_.erase(it);
}

void HttpServer::Impl::accept() {
  acceptor_->async_accept([this](const beast::error_code& ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
    if (ec) {
      // Out of descriptors or the like: try again shortly instead of spinning.
      spdlog::warn("http.accept_failed error=\"{}\"", ec.message());
      acceptPause_.expires_after(std::chrono::milliseconds(50));
      acceptPause_.async_wait([this](const beast::error_code& waited) {
        if (!waited) accept();
      });
      return;
    }
    beast::error_code ignored;
    const tcp::endpoint peer = socket.remote_endpoint(ignored);
    const IpAddress address = peerAddress(peer);
    const bool capped = !isTrustedProxy(address, options_.trustedProxies);
    if (!reserved(connectionCapKey(address), capped)) {
      // Refused at once, never queued: one non-blocking write, then close.
      static const std::string kBusy = [] {
        HttpResponse res = errorResponse(503, error_code::kTooManyConnections,
                                         "too many open connections; retry shortly");
        return fmt::format(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            "X-Content-Type-Options: nosniff\r\nRetry-After: 1\r\nContent-Length: {}\r\n"
            "Connection: close\r\n\r\n{}",
            res.body.size(), res.body);
      }();
      socket.non_blocking(true, ignored);
      socket.send(asio::buffer(kBusy), 0, ignored);
      socket.close(ignored);
    } else {
      // Without TCP_NODELAY small answers wait on Nagle's algorithm.
      socket.set_option(tcp::no_delay(true), ignored);
      std::make_shared<Connection>(*this, std::move(socket), address, capped)->start();
    }
    accept();
  });
}

Result<int> HttpServer::Impl::bind() {
  beast::error_code ec;
  const auto address = asio::ip::make_address(options_.listenAddress, ec);
  const auto failed = [this](const beast::error_code& why) -> Result<int> {
    const std::string where =
        "could not listen on " + options_.listenAddress + ":" + std::to_string(options_.port);
    if (why == asio::error::address_in_use)
      return makeError(error_code::kAddressInUse,
                       where +
                           ": address in use (another process listens there; choose "
                           "another --port or stop it)");
    if (why == asio::error::access_denied)
      return makeError(error_code::kPermissionDenied,
                       where +
                           ": permission denied (ports below 1024 need root or "
                           "CAP_NET_BIND_SERVICE)");
    if (why == boost::system::errc::address_not_available)
      return makeError(error_code::kAddressNotAvailable,
                       where + ": address not available (no interface of this host has it)");
    return makeError(error_code::kBindFailed, where + ": " + why.message());
  };
  if (ec) return failed(ec);
  const tcp::endpoint endpoint(address, static_cast<uint16_t>(options_.port));
  acceptor_.emplace(io_);
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    acceptor_.reset();
    return failed(ec);
  }
  return static_cast<int>(acceptor_->local_endpoint().port());
}

void HttpServer::Impl::run() {
  if (stopRequested_ || !acceptor_) return;
  accept();
  io_.run();
}

void HttpServer::Impl::stop() {
  stopRequested_ = true;
  setAccepting(false);
  io_.stop();
}

HttpServer::HttpServer(ServerOptions options, ServerParts parts)
    : impl_(std::make_unique<Impl>(std::move(options), parts)) {}

HttpServer::~HttpServer() { stop(); }

Result<int> HttpServer::bind() { return impl_->bind(); }
void HttpServer::run() { impl_->run(); }
void HttpServer::stopAccepting() { impl_->setAccepting(false); }
void HttpServer::stop() { impl_->stop(); }

std::vector<HttpServer::RouteName> HttpServer::routes() const {
  std::vector<RouteName> out;
  for (const Router::Route& route : impl_->router().routes()) out.push_back({route.method, route.pattern});
  return out;
}

}  // namespace webhooker::server
