// JSON pointers (RFC 6901): how a masking rule names a value inside a stored
// body. "" is the whole document, "/user/email" a member, "/items/0/sku" an
// element of an array; in a member name "~1" stands for "/" and "~0" for "~".
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace webhooker {

// The unescaped reference tokens of a pointer, outermost first.
using JsonPointer = std::vector<std::string>;

// nullopt unless `text` is "" or starts with "/" and uses "~" only as "~0"
// or "~1".
std::optional<JsonPointer> parseJsonPointer(std::string_view text);

// Replaces the value `pointer` refers to with `replacement`. False, with
// `doc` untouched, when it refers to nothing: a missing member, an index
// that is out of range or not a plain number ("-", "01"), a step into a
// string or number.
bool replaceAtPointer(nlohmann::ordered_json& doc, const JsonPointer& pointer,
                      const nlohmann::ordered_json& replacement);

}  // namespace webhooker
