// The jq worker process: the binary started again with
// jq::kWorkerArgument by JqSandbox, evaluating programs with libjq for its
// parent over the socket on fd 0 (frames of jq_protocol.h) until that socket
// closes. It limits itself first (address space, CPU time, no files written,
// no core dumps); compiled programs are kept, so a program is compiled once
// per worker. After half of its CPU allowance it says so in a reply and
// exits, and its parent starts a fresh one, so a long-lived worker never
// meets its CPU limit halfway through a program.
//
// Every main() of the project calls runJqWorkerIfAsked() first.
#pragma once

#include <optional>

namespace webhooker {

// The worker's exit status when argv asks for a worker; nullopt otherwise.
std::optional<int> runJqWorkerIfAsked(int argc, char** argv);

}  // namespace webhooker
