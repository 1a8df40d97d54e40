#include "bench/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

namespace webhooker::bench {

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n == 0 ? 0 : n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

bool Figure::met() const {
  if (!goal) return true;
  switch (goal->kind) {
    case Goal::Kind::kRatioAtLeast: return ratio() >= goal->bound;
    case Goal::Kind::kRatioAtMost: return ratio() <= goal->bound;
    case Goal::Kind::kValueAtMost: return value <= goal->bound;
  }
  return false;
}

std::string Figure::goalText() const {
  if (!goal) return "";
  switch (goal->kind) {
    case Goal::Kind::kRatioAtLeast: return fmt::format("ratio >= {:g}", goal->bound);
    case Goal::Kind::kRatioAtMost: return fmt::format("ratio <= {:g}", goal->bound);
    case Goal::Kind::kValueAtMost: return fmt::format("<= {:g} {}", goal->bound, unit);
  }
  return "";
}

void Report::add(Figure figure) { figures_.push_back(std::move(figure)); }

void Report::addRuns(const std::vector<Report>& runs) {
  if (runs.empty()) return;
  runs_ = static_cast<int>(runs.size());
  for (Figure figure : runs.front().figures_) {
    std::vector<double> values;
    std::vector<double> baselines;
    std::vector<double> ratios;
    for (const Report& run : runs) {
      for (const Figure& f : run.figures_) {
        if (f.scenario != figure.scenario || f.name != figure.name) continue;
        values.push_back(f.value);
        baselines.push_back(f.baseline);
        ratios.push_back(f.ratio());
      }
    }
    figure.value = median(values);
    figure.baseline = median(baselines);
    figure.medianRatio = median(ratios);
    figures_.push_back(std::move(figure));
  }
  for (const Report& run : runs) checks_.insert(checks_.end(), run.checks_.begin(), run.checks_.end());
}

void Report::addCheck(const std::string& scenario, std::vector<std::string> violations) {
  checks_.push_back({scenario, std::move(violations)});
}

bool Report::correct() const {
  for (const Check& c : checks_)
    if (!c.violations.empty()) return false;
  return true;
}

void Report::print(std::ostream& out) const {
  if (runs_ > 1) out << fmt::format("\nmedian of {} runs (ratio: the median of each run's own ratio)", runs_);
  out << fmt::format("\n{:<11} {:<44} {:>12} {:<8} {:>12}  {:<34} {:>7}  {:<16} {}\n", "scenario",
                     "figure", "value", "unit", "baseline", "baseline is", "ratio", "goal", "");
  for (const Figure& f : figures_) {
    const std::string verdict = !f.goal ? "" : !judgeGoals_ ? "(smoke)" : f.met() ? "pass" : "MISS";
    out << fmt::format("{:<11} {:<44} {:>12.2f} {:<8} {:>12.2f}  {:<34} {:>7.3f}  {:<16} {}\n",
                       f.scenario, f.name, f.value, f.unit, f.baseline, f.baselineName, f.ratio(),
                       f.goalText(), verdict);
  }
  out << "\ncorrectness:\n";
  for (const Check& c : checks_) {
    out << fmt::format("  {:<11} {}\n", c.scenario,
                       c.violations.empty() ? "ok" : fmt::format("{} VIOLATIONS", c.violations.size()));
    for (const std::string& v : c.violations) out << "      " << v << "\n";
  }
}

void Report::writeJson(const std::filesystem::path& file, double totalSeconds) const {
  nlohmann::json figures = nlohmann::json::array();
  for (const Figure& f : figures_) {
    nlohmann::json j = {{"scenario", f.scenario}, {"figure", f.name},          {"value", f.value},
                        {"unit", f.unit},         {"baseline", f.baseline},    {"baseline_is", f.baselineName},
                        {"ratio", f.ratio()}};
    if (f.goal) {
      j["goal"] = f.goalText();
      if (judgeGoals_) j["met"] = f.met();
    }
    figures.push_back(std::move(j));
  }
  nlohmann::json checks = nlohmann::json::object();
  for (const Check& c : checks_) checks[c.scenario] = c.violations;
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << nlohmann::json{{"figures", figures},
                                        {"correctness", checks},
                                        {"correct", correct()},
                                        {"runs", runs_},
                                        {"seconds", totalSeconds}}
                             .dump(2)
                      << "\n";
}

}  // namespace webhooker::bench
