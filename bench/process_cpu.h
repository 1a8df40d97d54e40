// CPU time of processes, read from /proc: what a scenario's work cost the
// machine, which on a shared machine is steadier than its rate.
#pragma once

#include <sys/types.h>

namespace webhooker::bench {

// User + system CPU seconds of `pid` and of its live children (a daemon's
// jq workers); 0 for a process that is gone.
double processTreeCpuSeconds(pid_t pid);

// User + system CPU seconds of this process (the load generator and the
// receivers run here).
double selfCpuSeconds();

}  // namespace webhooker::bench
