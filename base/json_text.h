// Whether a stored body is JSON, and its value: what masking and the Slack
// message mean by "a JSON body".
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace webhooker {

// The parsed value, member order kept; a discarded value when `text` is not
// exactly one JSON text. Invalid UTF-8 is not JSON, and neither is text with
// a NUL byte (nlohmann alone would stop at it as if the input ended there,
// taking "{}\0<anything>" for "{}"), nor text nested deeper than
// kMaxJsonDepth, which dump() could not write back without overflowing the
// stack.
nlohmann::ordered_json parseJsonText(std::string_view text);

// Whether parseJsonText would accept `text`, found in one pass without
// building the value (a parse of a 7 KB body before each routing program
// was a fifth of the daemon's CPU): the RFC 8259 grammar, UTF-8 and escapes
// checked as nlohmann checks them, a number that overflows a double refused
// as nlohmann refuses it. A leading byte order mark is not skipped, unlike
// parseJsonText: the text is to be embedded in another JSON text as it is.
bool isJsonText(std::string_view text);

// `text`, which parseJsonText accepted, indented by two spaces per level the
// way nlohmann's dump(2) does, but with every number copied as the sender
// wrote it: parsing would turn an integer beyond 64 bits into a double
// (12345678901234567890123 shown as 1.2345678901234568e+22). Strings are
// written as dump() writes them. Iterative: no recursion per level.
std::string prettyJsonText(std::string_view text);

}  // namespace webhooker
