// Binding the bench's cpp-httplib servers (the receiver, the bare server).
#pragma once

#include <httplib.h>

namespace webhooker::bench {

// Binds `server` to a free port on 127.0.0.1 and returns the port; throws if
// it cannot. cpp-httplib listens with a backlog of 5: when dozens of
// connections open at once, the kernel drops the SYNs past it and each of
// those clients tries again a second later, a stall of the bench rather
// than of what it measures. The backlog is raised to SOMAXCONN.
int bindLoopbackWithFullBacklog(httplib::Server& server);

}  // namespace webhooker::bench
