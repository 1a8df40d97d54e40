// JSON nesting depth, found by scanning the text without parsing it.
//
// nlohmann's parser copes with any depth, but dump() and merge_patch()
// recurse once per level: a body of 100,000 '[' overflows a thread's stack.
// Whoever builds a value from outside input that may later be dumped or
// merged checks it here first and refuses it (or treats it as not JSON).
#pragma once

#include <cstddef>
#include <string_view>

namespace webhooker {

// Far more than any real webhook payload or API body nests, and shallow
// enough for any recursion on a worker's stack.
inline constexpr size_t kMaxJsonDepth = 128;

// True when `text` nests arrays and objects no deeper than `maxDepth`.
// Brackets inside strings do not count; `text` need not be valid JSON.
bool jsonDepthWithin(std::string_view text, size_t maxDepth = kMaxJsonDepth);

}  // namespace webhooker
