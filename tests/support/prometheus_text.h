// Reading Prometheus text exposition in tests: the series as a test sees
// them on /metrics, without trusting our own metric objects.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace webhooker::testing {

using Labels = std::map<std::string, std::string>;

struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
};

// Parses `name{a="b",c="d"} value` lines; comments and blank lines skipped.
std::vector<Sample> parseSamples(const std::string& text);

// The value of the series with exactly these labels; nullopt if absent.
std::optional<double> valueOf(const std::string& text, const std::string& name,
                              const Labels& labels);

// The value, or -1 when the series is absent (every real value is >= 0),
// so a failed CHECK shows the number.
double valueIn(const std::string& text, const std::string& name, const Labels& labels);

inline Labels typeIs(const std::string& type) { return {{"target_type", type}}; }

}  // namespace webhooker::testing
