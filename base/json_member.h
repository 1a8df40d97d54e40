// One string member of a JSON object, found by scanning the text instead of
// parsing it: ingest reads the default event type ("type") of every JSON
// body, and a full parse of a 7 KB body cost 17% of the daemon's CPU.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace webhooker {

// The decoded value of the first member `name` of the top-level object in
// `text` whose value is a string (members of that name with other values
// are passed over), or nullopt: no such member, `text` is not an object,
// or the object nests deeper than kMaxJsonDepth before the member.
//
// The scan stops at the member, and it checks structure, not content: on
// valid JSON the answer is what a parser gives (a UTF-8 byte order mark is
// skipped, as nlohmann does); before the member it follows strings, nesting
// and separators, and stops with nullopt where they break, but it does not
// check numbers, escapes or UTF-8 in the values it skips.
std::optional<std::string> topLevelStringMember(std::string_view text, std::string_view name);

}  // namespace webhooker
