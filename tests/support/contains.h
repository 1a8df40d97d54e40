// contains: whether a text (a log, a page, an error message) holds a part
// anywhere. One spelling for the tests that look for words in output.
#pragma once

#include <string_view>

namespace webhooker::testing {

inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace webhooker::testing
