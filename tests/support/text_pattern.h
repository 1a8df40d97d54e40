// Regular expressions (ECMAScript, as std::regex reads them) over what a
// test reads back: output, pages, exposition text. Compiled once in the
// support library, so a test file does not instantiate <regex> again.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace webhooker::testing {

// Any UUID, in either case: ids that must not leak into a text.
inline constexpr const char* kUuidPattern =
    "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

// Whether `pattern` matches the whole of `text`.
bool matchesWhole(const std::string& text, const std::string& pattern);

// The first part of `text` that `pattern` matches; nullopt when none does.
std::optional<std::string> firstMatch(const std::string& text, const std::string& pattern);

// Every match of `pattern` in `text`, left to right, or what its capture
// `group` caught in each.
std::vector<std::string> allMatches(const std::string& text, const std::string& pattern,
                                    int group = 0);

}  // namespace webhooker::testing
