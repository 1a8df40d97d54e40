// LeftoverJanitor: a benchmark run leaves no daemon, no HAProxy and no temp
// folder behind, however it ends: Ctrl-C, SIGTERM, a crash, even SIGKILL.
//
// Cleaning up inside the bench when a signal comes does not work: a scenario
// can be deep in a minute-long load or drain, and while a signal thread
// kills the daemons and removes folders, the scenario's thread goes on (it
// sees its daemon die, moves on, creates the next folder and starts the next
// daemon). So the cleanup runs after the bench is gone, in a small process
// forked at start: it waits on a pipe whose write end only the bench holds
// (close-on-exec, so the daemons do not inherit it); end of file means the
// bench has exited. It then SIGKILLs every process whose command line names
// the run's scratch folder (the daemons: their --data-dir is in it; the
// cluster scenario's HAProxy: its -f configuration file is) and removes the
// folder. It ignores SIGINT and SIGTERM, which Ctrl-C sends to
// the whole process group.
//
// Every temp folder of the run lives in that scratch folder: the constructor
// points TMPDIR at it, which testing::TempDir (through
// std::filesystem::temp_directory_path) follows.
//
// Ownership and threads: construct one, first thing in main, before any
// thread starts (fork copies only the calling thread). Its destructor
// removes the scratch folder (empty by then) on a normal end.
#pragma once

#include <filesystem>

namespace webhooker::bench {

class LeftoverJanitor {
 public:
  LeftoverJanitor();
  ~LeftoverJanitor();
  LeftoverJanitor(const LeftoverJanitor&) = delete;
  LeftoverJanitor& operator=(const LeftoverJanitor&) = delete;

 private:
  std::filesystem::path scratch_;
  int lifeline_ = -1;  // write end of the janitor's pipe, closed only by our exit
};

}  // namespace webhooker::bench
