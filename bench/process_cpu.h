// CPU time of processes, read from /proc: what a scenario's work cost the
// machine, which on a shared machine is steadier than its rate.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace webhooker::bench {

// User + system CPU seconds of `pid` and of its live children (a daemon's
// jq workers); 0 for a process that is gone.
double processTreeCpuSeconds(pid_t pid);

// User + system CPU seconds of this process (the load generator and the
// receivers run here).
double selfCpuSeconds();

// `seconds` of CPU shared out over `count`, in µs (0 for none).
inline double microsPer(double seconds, size_t count) {
  return count > 0 ? seconds * 1e6 / static_cast<double>(count) : 0;
}

// CPU seconds this process and, if given, a daemon's tree spend from the
// meter's construction on.
class CpuMeter {
 public:
  explicit CpuMeter(pid_t daemon = 0) : daemon_(daemon), start_(now()) {}

  double seconds() const { return now() - start_; }
  // seconds() shared out over `count` (0 for none).
  double secondsPer(size_t count) const {
    return count > 0 ? seconds() / static_cast<double>(count) : 0;
  }

 private:
  double now() const { return selfCpuSeconds() + (daemon_ ? processTreeCpuSeconds(daemon_) : 0); }

  pid_t daemon_;
  double start_;
};

}  // namespace webhooker::bench
