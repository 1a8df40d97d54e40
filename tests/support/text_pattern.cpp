#include "tests/support/text_pattern.h"

#include <regex>

namespace webhooker::testing {

bool matchesWhole(const std::string& text, const std::string& pattern) {
  return std::regex_match(text, std::regex(pattern));
}

std::optional<std::string> firstMatch(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) return std::nullopt;
  return m.str();
}

std::vector<std::string> allMatches(const std::string& text, const std::string& pattern,
                                    int group) {
  const std::regex re(pattern);
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[group].str());
  return out;
}

}  // namespace webhooker::testing
