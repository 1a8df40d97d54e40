// JSON pointers (base/json_pointer) and body masking (storage/body_masking).
// The input is up to four pointer lines, then the body. Properties:
//  - a pointer parses exactly when nlohmann::json_pointer accepts it, and its
//    tokens, escaped again, give back the text (parse → format → parse);
//  - masking does what nlohmann's own pointer operations do to a copy:
//    every pointer that names a value, in order, replaces it with "[masked]",
//    and a body nothing was replaced in is left as it is;
//  - masking is idempotent: the masked body masked again does not change.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_pointer.h"
#include "base/json_text.h"
#include "fuzz/fuzz_check.h"
#include "storage/body_masking.h"

namespace {

using nlohmann::ordered_json;

std::string format(const webhooker::JsonPointer& pointer) {
  std::string out;
  for (const std::string& token : pointer) {
    out += '/';
    for (const char c : token) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  }
  return out;
}

std::optional<webhooker::JsonPointer> checkPointer(const std::string& text) {
  const auto pointer = webhooker::parseJsonPointer(text);
  bool accepted = true;
  try {
    (void)ordered_json::json_pointer(text);
  } catch (const nlohmann::json::exception&) {
    accepted = false;
  }
  FUZZ_CHECK(pointer.has_value() == accepted);
  if (pointer) FUZZ_CHECK(format(*pointer) == text);
  return pointer;
}

// The reference: nlohmann's contains() and operator[] on json_pointer.
// True when any pointer named a value.
bool maskWithNlohmann(ordered_json& doc, const std::vector<std::string>& pointers) {
  bool replaced = false;
  for (const std::string& text : pointers) {
    const ordered_json::json_pointer pointer(text);
    bool named = false;
    try {
      named = doc.contains(pointer);
    } catch (const nlohmann::json::exception&) {  // an index past size_t: names nothing
    }
    if (named) doc[pointer] = webhooker::kMaskedValue;
    replaced = replaced || named;
  }
  return replaced;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> texts;
  std::vector<webhooker::JsonPointer> pointers;
  for (int i = 0; i < 4; ++i) {
    const size_t newline = rest.find('\n');
    if (newline == std::string_view::npos) break;
    const std::string text(rest.substr(0, newline));
    rest.remove_prefix(newline + 1);
    if (auto pointer = checkPointer(text)) {
      texts.push_back(text);
      pointers.push_back(std::move(*pointer));
    }
  }
  const std::string body(rest);

  const webhooker::MaskedBody masked = webhooker::maskJsonBody(body, pointers);
  auto reference = webhooker::parseJsonText(body);
  FUZZ_CHECK(masked.json == !reference.is_discarded());
  if (!masked.json) {
    FUZZ_CHECK(!masked.changed);  // not JSON: left as received
    return 0;
  }
  const bool replaced = maskWithNlohmann(reference, texts);
  const std::string expected = reference.dump();
  FUZZ_CHECK(masked.changed == (replaced && expected != body));
  if (!masked.changed) return 0;
  FUZZ_CHECK(masked.body == expected);
  const webhooker::MaskedBody again = webhooker::maskJsonBody(masked.body, pointers);
  FUZZ_CHECK(again.json && !again.changed);
  return 0;
}
