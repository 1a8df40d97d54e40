// Blackhole: a listening socket on 127.0.0.1 that never accepts. Connections
// complete in the kernel's backlog and then wait for an answer that never
// comes, so deliveries to it stay unfinished for as long as a benchmark
// looks at the backlog.
#pragma once

#include <string>

namespace webhooker::bench {

class Blackhole {
 public:
  Blackhole();
  ~Blackhole();
  Blackhole(const Blackhole&) = delete;
  Blackhole& operator=(const Blackhole&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace webhooker::bench
