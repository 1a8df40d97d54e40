// Names the calling thread, so that the tools that list a process's threads
// (top -H, ps -L, perf, gdb) tell the daemon's parts apart. Linux keeps 15
// bytes of a name and cuts the rest. The main thread is left alone: its
// name is the process's, which `pgrep webhooker` and the service manager
// look for.
#pragma once

namespace webhooker {

void nameThisThread(const char* name);

}  // namespace webhooker
