#include "bench/process_cpu.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace webhooker::bench {
namespace {

struct ProcStat {
  pid_t parent = 0;
  double cpuSeconds = 0;
};

// /proc/<pid>/stat: the fields after the command name, which may hold
// spaces and parentheses, so the parse starts after its last ')'.
bool readStat(const std::filesystem::path& file, ProcStat& out) {
  std::ifstream in(file);
  std::string text;
  if (!std::getline(in, text)) return false;
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 2));
  std::string state;
  long ppid = 0;
  unsigned long skip = 0, utime = 0, stime = 0;
  fields >> state >> ppid;
  for (int i = 0; i < 9; ++i) fields >> skip;  // pgrp .. cmajflt
  fields >> utime >> stime;
  if (!fields) return false;
  out.parent = static_cast<pid_t>(ppid);
  out.cpuSeconds = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return true;
}

}  // namespace

double processTreeCpuSeconds(pid_t pid) {
  ProcStat self;
  if (!readStat("/proc/" + std::to_string(pid) + "/stat", self)) return 0;
  double total = self.cpuSeconds;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    ProcStat child;
    if (entry.path().filename().string().find_first_not_of("0123456789") == std::string::npos &&
        readStat(entry.path() / "stat", child) && child.parent == pid)
      total += child.cpuSeconds;
  }
  return total;
}

double selfCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace webhooker::bench
