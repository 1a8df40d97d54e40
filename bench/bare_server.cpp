#include "bench/bare_server.h"

#include <stdexcept>

#include "tests/support/loopback_listen.h"

namespace webhooker::bench {

BareServer::BareServer(int threads) {
  server_.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  server_.set_tcp_nodelay(true);
  server_.set_keep_alive_max_count(1'000'000);
  server_.Post(".*", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"event_id":"00000000-0000-4000-8000-000000000000","deliveries":1})",
                    "application/json");
  });
  server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  port_ = testing::bindLoopbackWithFullBacklog(server_);
  if (port_ <= 0) throw std::runtime_error("bare server: cannot listen on 127.0.0.1");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
}

BareServer::~BareServer() {
  server_.stop();
  thread_.join();
}

}  // namespace webhooker::bench
