// Comparing names that are case-insensitive in ASCII only, as HTTP header
// names are (RFC 9110 §5.1): no locale, no Unicode folding.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace webhooker {

inline bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// `s` with A-Z turned into a-z; every other byte as it is.
inline std::string asciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace webhooker
