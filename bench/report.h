// Report: the figures of one benchmark run, each against the baseline
// measured in the same run, with pass/miss against the goals of the speed
// issue. Printed as a table and written as JSON.
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace webhooker::bench {

struct Goal {
  enum class Kind { kRatioAtLeast, kValueAtMost };
  Kind kind;
  double bound;
};

struct Figure {
  std::string scenario;
  std::string name;
  double value = 0;
  std::string unit;
  double baseline = 0;
  std::string baselineName;
  std::optional<Goal> goal;

  double ratio() const { return baseline > 0 ? value / baseline : 0; }
  bool met() const;
  std::string goalText() const;
};

class Report {
 public:
  explicit Report(bool judgeGoals) : judgeGoals_(judgeGoals) {}

  void add(Figure figure);
  // Folds another run in: each figure's value and baseline become the median
  // over the runs (matched by scenario and name); checks are kept from all.
  void addRuns(const std::vector<Report>& runs);
  // A scenario's correctness violations (none is a pass).
  void addCheck(const std::string& scenario, std::vector<std::string> violations);
  bool correct() const;

  void print(std::ostream& out) const;
  void writeJson(const std::filesystem::path& file, double totalSeconds) const;

 private:
  struct Check {
    std::string scenario;
    std::vector<std::string> violations;
  };
  const bool judgeGoals_;  // false in the smoke run: tiny sizes say nothing about speed
  std::vector<Figure> figures_;
  int runs_ = 1;
  std::vector<Check> checks_;
};

}  // namespace webhooker::bench
