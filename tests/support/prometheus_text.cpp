#include "tests/support/prometheus_text.h"

#include <algorithm>
#include <cstdlib>

namespace webhooker::testing {

std::vector<Sample> parseSamples(const std::string& text) {
  std::vector<Sample> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line.front() == '#') continue;
    Sample s;
    size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t eq = line.find('=', i);
        const std::string key = line.substr(i, eq - i);
        i = eq + 2;  // past ="
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) {
            ++i;
            value.push_back(line[i] == 'n' ? '\n' : line[i]);
          } else {
            value.push_back(line[i]);
          }
          ++i;
        }
        ++i;  // past the closing quote
        if (i < line.size() && line[i] == ',') ++i;
        s.labels[key] = value;
      }
      ++i;  // past }
    }
    s.value = std::strtod(line.c_str() + std::min(i, line.size()), nullptr);
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<double> valueOf(const std::string& text, const std::string& name,
                                     const Labels& labels) {
  for (const Sample& s : parseSamples(text))
    if (s.name == name && s.labels == labels) return s.value;
  return std::nullopt;
}

double valueIn(const std::string& text, const std::string& name, const Labels& labels) {
  return valueOf(text, name, labels).value_or(-1);
}

}  // namespace webhooker::testing
