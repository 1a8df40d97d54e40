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
  enum class Kind { kRatioAtLeast, kRatioAtMost, kValueAtMost };
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
  // Over several runs: the median of each run's own ratio. A run measures
  // its value and baseline back to back, so a slow spell of the shared
  // machine lowers both sides of one ratio; the ratio of the two medians
  // could pair one run's value with another run's baseline.
  std::optional<double> medianRatio = std::nullopt;

  double ratio() const {
    if (medianRatio) return *medianRatio;
    return baseline > 0 ? value / baseline : 0;
  }
  bool met() const;
  std::string goalText() const;
};

class Report {
 public:
  explicit Report(bool judgeGoals) : judgeGoals_(judgeGoals) {}

  void add(Figure figure);
  // Folds several runs in: each figure's value, baseline and ratio become
  // the medians over the runs (matched by scenario and name); checks are
  // kept from all.
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
