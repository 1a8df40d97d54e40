// BareServer: the ingest baseline — a cpp-httplib server with the daemon's
// thread count, keep-alive and TCP_NODELAY that reads each POST and answers
// 200 with a small JSON body, storing nothing. What the HTTP layer alone
// costs on this machine.
#pragma once

#include <httplib.h>

#include <string>
#include <thread>

namespace webhooker::bench {

class BareServer {
 public:
  explicit BareServer(int threads);
  ~BareServer();
  BareServer(const BareServer&) = delete;
  BareServer& operator=(const BareServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace webhooker::bench
