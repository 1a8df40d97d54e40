// slow-clients: a flood of connections held open by an attacker while a
// good client posts events at a fixed rate and a probe asks /healthz once a
// second, in three variants:
//  - trickle: half send a request head one byte every 5 s, half sit idle on
//    keep-alive;
//  - body up front, then silence: each sends a POST head declaring 1 MiB and
//    1 MiB − 1 byte of body at once, then nothing (half as many connections:
//    1 MiB each);
//  - huge chunk extension: each sends a chunked GET /healthz whose first
//    chunk line goes on for 10 MiB, 64 KiB every 100 ms as far as the socket
//    takes it (a twentieth as many connections: each sends 10 MiB).
// Each attacking connection is opened again as soon as the server closes it.
// Measured on the daemon (default limits) and, in the same run, on a bare
// cpp-httplib server (8 threads) under the same flood: the good client's p99
// and failures, the seconds /healthz went unanswered, and the daemon's RSS
// over an idle daemon's.
//
// The attacker comes from 127.0.0.1 like everyone else here, so the daemon
// runs with a per-address cap above the flood: what is measured is the cost
// of holding the connections, not the cap refusing them.
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "bench/bare_server.h"
#include "bench/load_generator.h"
#include "bench/receiver.h"
#include "bench/scenario_support.h"
#include "bench/scenarios.h"

namespace webhooker::bench {

namespace {

using namespace std::chrono_literals;

enum class Attack { kTrickle, kBodyThenSilence, kChunkExtension };

constexpr auto kTrickleEvery = 5s;
// A trickler sends the request line at once, then its head a byte at a time.
constexpr std::string_view kRequestLine =
    "POST /hooks/00000000-0000-4000-8000-000000000000 HTTP/1.1\r\n";
constexpr std::string_view kTrickle = "X-Trickle: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
constexpr std::string_view kIdle = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
constexpr size_t kUpFrontBody = 1 << 20;
constexpr std::string_view kUpFrontHead =
    "POST /hooks/00000000-0000-4000-8000-000000000000 HTTP/1.1\r\nHost: x\r\n"
    "Content-Type: application/json\r\nContent-Length: 1048576\r\n\r\n";
constexpr std::string_view kExtensionHead =
    "GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;ext=";
constexpr size_t kExtension = 10 << 20;
// What one extension connection sends at most per pass (every 100 ms).
constexpr size_t kExtensionPerPass = 64 << 10;

// The attacker: one thread, non-blocking sockets.
class Flood {
 public:
  Flood(int port, Attack attack, int connections)
      : port_(port),
        attack_(attack),
        filler_(std::max(kUpFrontBody, kExtensionPerPass), 'a'),
        sockets_(static_cast<size_t>(connections)) {
    for (size_t i = 0; i < sockets_.size(); ++i) open(i);
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
  }
  ~Flood() {
    thread_.request_stop();
    thread_.join();
    for (const Socket& s : sockets_) ::close(s.fd);
  }
  Flood(const Flood&) = delete;
  Flood& operator=(const Flood&) = delete;

 private:
  struct Socket {
    int fd = -1;
    size_t sent = 0;  // bytes after the first write: trickled head, body or extension
  };

  bool trickles(size_t i) const { return attack_ == Attack::kTrickle && i % 2 == 0; }

  std::string_view first(size_t i) const {
    switch (attack_) {
      case Attack::kTrickle: return trickles(i) ? kRequestLine : kIdle;
      case Attack::kBodyThenSilence: return kUpFrontHead;
      case Attack::kChunkExtension: return kExtensionHead;
    }
    return {};
  }

  void open(size_t i) {
    Socket& s = sockets_[i];
    if (s.fd >= 0) ::close(s.fd);
    s = Socket{::socket(AF_INET, SOCK_STREAM, 0), 0};
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::fcntl(s.fd, F_SETFL, O_NONBLOCK);
    ::send(s.fd, first(i).data(), first(i).size(), MSG_NOSIGNAL);
  }

  // A socket the server closed reads as the end of the stream.
  bool closedByServer(const Socket& s) const {
    char buf[4096];
    while (true) {
      const ssize_t n = ::recv(s.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0) return true;
      if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
    }
  }

  // Sends what the attack still has for `s` this pass, as far as the socket
  // takes it.
  void push(Socket& s, bool trickleNow, size_t i) {
    size_t want = 0;
    switch (attack_) {
      case Attack::kTrickle:
        if (trickleNow && trickles(i) && s.sent < kTrickle.size() &&
            ::send(s.fd, kTrickle.data() + s.sent, 1, MSG_NOSIGNAL) == 1)
          ++s.sent;
        return;
      case Attack::kBodyThenSilence: want = kUpFrontBody - 1 - s.sent; break;
      case Attack::kChunkExtension:
        want = std::min(kExtensionPerPass, kExtension - s.sent);
        break;
    }
    if (want == 0) return;
    const ssize_t n = ::send(s.fd, filler_.data(), want, MSG_NOSIGNAL);
    if (n > 0) s.sent += static_cast<size_t>(n);
  }

  void run(const std::stop_token& stop) {
    auto nextTrickle = std::chrono::steady_clock::now() + kTrickleEvery;
    while (!stop.stop_requested()) {
      const bool trickleNow = std::chrono::steady_clock::now() >= nextTrickle;
      if (trickleNow) nextTrickle += kTrickleEvery;
      for (size_t i = 0; i < sockets_.size(); ++i) {
        if (closedByServer(sockets_[i])) {
          open(i);
          continue;
        }
        push(sockets_[i], trickleNow, i);
      }
      std::this_thread::sleep_for(100ms);
    }
  }

  const int port_;
  const Attack attack_;
  const std::string filler_;
  std::vector<Socket> sockets_;
  std::jthread thread_;
};

struct FloodResult {
  LoadResult good;
  int healthzUnanswered = 0;
  double peakRssMb = 0;
};

// The good client's load and the /healthz probe, both under `connections`
// held open against `port`.
FloodResult underFlood(const BenchConfig& config, const LoadSpec& spec, int port, Attack attack,
                       int connections) {
  Flood flood(port, attack, connections);
  std::this_thread::sleep_for(1s);  // let the flood open
  std::atomic<int> unanswered{0};
  std::jthread probe([&](std::stop_token stop) {
    while (!stop.stop_requested()) {
      const auto second = std::chrono::steady_clock::now() + 1s;
      httplib::Client client("127.0.0.1", port);
      client.set_connection_timeout(1s);
      client.set_read_timeout(1s);
      const auto res = client.Get("/healthz");
      if (!res || res->status != 200) ++unanswered;
      std::this_thread::sleep_until(second);
    }
  });
  FloodResult result;
  result.good = runLoad(spec, config.bodies);
  probe.request_stop();
  probe.join();
  result.healthzUnanswered = unanswered;
  return result;
}

LoadSpec goodClient(const BenchConfig& config) {
  LoadSpec spec;
  spec.connections = 8;
  spec.rate = config.floodRate;
  spec.requests = static_cast<size_t>(config.floodRate * config.floodSeconds);
  spec.readTimeout = 5s;
  return spec;
}

struct Variant {
  Attack attack;
  std::string name;  // "" for the trickle, the original flood
  int connections;
};

void runVariant(const BenchConfig& config, const Variant& variant, double idleRss,
                Report& report) {
  FloodResult bare;
  {
    BareServer server(8);
    LoadSpec spec = goodClient(config);
    spec.baseUrl = server.url();
    spec.path = "/hooks/00000000-0000-4000-8000-000000000000";
    spec.firstSeq = reserveSeqs(spec.requests);
    bare = underFlood(config, spec, portOf(server.url()), variant.attack, variant.connections);
  }

  BenchReceiver receiver;
  FloodResult daemon;
  daemon.good = loadThroughDaemon(
      config, goodClient(config), LoadTarget::http(receiver), "slow-clients", report,
      {"--max-connections-per-address", std::to_string(variant.connections + 100)},
      [&](BenchDaemon& running, const LoadSpec& spec) {
        FloodResult r =
            underFlood(config, spec, portOf(running.url()), variant.attack, variant.connections);
        daemon.healthzUnanswered = r.healthzUnanswered;
        daemon.peakRssMb = running.peakRssMb();
        return r.good;
      });

  const std::string held = (variant.name.empty() ? "" : ", " + variant.name) + " (" +
                           std::to_string(variant.connections) + " held)";
  const auto failures = [](const FloodResult& r) {
    return static_cast<double>(r.good.requests.size() - r.good.ok());
  };
  report.add({"slow-clients", "good client p99" + held, daemon.good.latencyPercentile(99), "ms",
              bare.good.latencyPercentile(99), "bare httplib server, same flood",
              Goal{Goal::Kind::kValueAtMost, 50}});
  report.add({"slow-clients", "good client failures" + held, failures(daemon), "req",
              failures(bare), "bare httplib server, same flood", Goal{Goal::Kind::kValueAtMost, 0}});
  report.add({"slow-clients", "/healthz seconds unanswered" + held,
              static_cast<double>(daemon.healthzUnanswered), "s",
              static_cast<double>(bare.healthzUnanswered), "bare httplib server, same flood",
              Goal{Goal::Kind::kValueAtMost, 0}});
  report.add({"slow-clients", "daemon RSS over idle" + held, daemon.peakRssMb - idleRss, "MB",
              idleRss, "idle daemon peak RSS", Goal{Goal::Kind::kValueAtMost, 100}});
}

}  // namespace

void runSlowClients(const BenchConfig& config, Report& report) {
  const int connections = config.floodConnections;
  const double idleRss = idleDaemonPeakRssMb();
  const Variant variants[] = {
      {Attack::kTrickle, "", connections},
      {Attack::kBodyThenSilence, "body up front then silence", std::max(connections / 2, 1)},
      {Attack::kChunkExtension, "huge chunk extension", std::max(connections / 20, 1)},
  };
  for (const Variant& variant : variants) runVariant(config, variant, idleRss, report);
}

}  // namespace webhooker::bench
