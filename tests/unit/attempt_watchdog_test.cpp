// The watchdog ends an HTTP attempt at its deadline even when the receiver
// keeps every single read within the read timeout (a byte at a time); and
// an attempt whose DNS lookup hangs ends as a timeout at the same deadline.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/url.h"
#include "targets/attempt_watchdog.h"
#include "targets/http_client.h"
#include "net/resolver.h"
#include "net/ssrf_guard.h"

using namespace std::chrono_literals;

namespace {

// Accepts one connection and trickles a header one byte per 50 ms, until
// stopped or the client hangs up; after kBytes (10 s) it ends the header and
// the answer, so an attempt nobody cuts succeeds instead of hanging.
class TricklingServer {
 public:
  TricklingServer() {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    listen(listener_, 1);
    thread_ = std::jthread([this](std::stop_token stop) {
      const int conn = accept(listener_, nullptr, nullptr);
      if (conn < 0) return;
      const std::string start = "HTTP/1.1 200 OK\r\nX-Slow: ";
      (void)!write(conn, start.data(), start.size());
      for (int sent = 0; !stop.stop_requested(); ++sent) {
        if (sent == kBytes) {
          const std::string end = "\r\nContent-Length: 0\r\n\r\n";
          (void)!write(conn, end.data(), end.size());
          break;
        }
        if (write(conn, "a", 1) != 1) break;
        std::this_thread::sleep_for(50ms);
      }
      close(conn);
    });
  }
  ~TricklingServer() {
    thread_.request_stop();
    shutdown(listener_, SHUT_RDWR);
    close(listener_);
  }
  int port() const { return port_; }

 private:
  static constexpr int kBytes = 200;
  int listener_ = -1;
  int port_ = 0;
  std::jthread thread_;
};

}  // namespace

TEST_CASE("an attempt past its deadline is cut off even if every read is quick") {
  TricklingServer server;
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(5, 0);  // each byte comes well within this
  webhooker::AttemptWatchdog watchdog;

  const auto start = std::chrono::steady_clock::now();
  const uint64_t ticket = watchdog.watch(client, start + 400ms);
  auto result = client.Get("/");
  watchdog.unwatch(ticket);
  const auto took = std::chrono::steady_clock::now() - start;

  // Cut, not answered: the header would have ended after 10 s.
  CHECK_FALSE(result);
  CHECK(took >= 400ms);
}

TEST_CASE("a shorter deadline watched after a longer one is kept") {
  // The watch thread sleeps until the earliest deadline it knows; a later
  // watch with an earlier deadline must wake it, not wait behind the first.
  httplib::Client idle("127.0.0.1", 9);  // watched only, never used
  TricklingServer server;
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(5, 0);
  webhooker::AttemptWatchdog watchdog;
  const auto start = std::chrono::steady_clock::now();
  const uint64_t longer = watchdog.watch(idle, start + 30s);
  std::this_thread::sleep_for(50ms);  // the watch thread is asleep until +30 s
  const uint64_t shorter = watchdog.watch(client, start + 400ms);
  auto result = client.Get("/");
  watchdog.unwatch(shorter);
  watchdog.unwatch(longer);
  const auto took = std::chrono::steady_clock::now() - start;

  CHECK_FALSE(result);
  CHECK(took >= 400ms);
  CHECK(took < 5s);  // the trickle would have ended it after 10 s
}

TEST_CASE("an attempt that finishes in time is left alone") {
  httplib::Server server;
  server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::jthread serving([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(1ms);

  httplib::Client client("127.0.0.1", port);
  webhooker::AttemptWatchdog watchdog;
  const uint64_t ticket = watchdog.watch(client, std::chrono::steady_clock::now() + 300ms);
  auto result = client.Get("/");
  watchdog.unwatch(ticket);
  REQUIRE(result);
  CHECK(result->status == 200);
  // After unwatch the deadline passing must not touch the client.
  std::this_thread::sleep_for(400ms);
  auto again = client.Get("/");
  REQUIRE(again);
  CHECK(again->status == 200);
  server.stop();
}

namespace {

// A resolver whose lookups hang until release(): a DNS server that never
// answers (getaddrinfo cannot be interrupted either).
class HangingResolver final : public webhooker::Resolver {
 public:
  webhooker::Result<std::vector<webhooker::IpAddress>> resolve(const std::string& host) override {
    std::unique_lock lock(mutex_);
    ++lookups_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return released_; });
    return webhooker::makeError("dns_failure", "cannot resolve " + host + ": released");
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }
  bool waitForLookup(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return lookups_ > 0; });
  }

 private:
  std::mutex mutex_;  // guards lookups_ and released_
  std::condition_variable changed_;
  int lookups_ = 0;
  bool released_ = false;
};

}  // namespace

TEST_CASE("resolving the host counts against the attempt's timeout") {
  HangingResolver resolver;
  const webhooker::SsrfGuard guard(resolver, {});
  const webhooker::SystemClock clock;
  webhooker::OutboundRequest request;
  request.url = webhooker::parseHttpUrl("http://hangs.example/hook").value();
  request.timeout = 300ms;
  webhooker::OutboundResponse response;
  {
    webhooker::HttpClient client(guard, clock);
    // The resolver answers only when released, which is after the attempt
    // has had ten times its timeout: an attempt that waits for it fails here.
    auto attempt = std::async(std::launch::async, [&] { return client.send(request); });
    REQUIRE(resolver.waitForLookup(5s));
    const bool ended = attempt.wait_for(3s) == std::future_status::ready;
    resolver.release();  // the lookup's thread can end: the client joins it
    CHECK(ended);
    response = attempt.get();
  }
  CHECK(response.failure == webhooker::OutboundResponse::Failure::kTimeout);
  CHECK(response.duration >= request.timeout);
  CHECK(response.error.find("resolving hangs.example") != std::string::npos);
}
