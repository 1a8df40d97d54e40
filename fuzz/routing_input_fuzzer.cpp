// The routing input of hostile requests: jqInput (what every routing jq
// program reads) and the event-type rules that need no jq (header, JSON
// pointer, the default), over any bytes in header names, values and body.
// Properties:
//  - the jq input is always one JSON object with exactly event_type,
//    headers, body and received_at; its header names are lower case; its
//    body is the parsed body when the body is JSON, else null;
//  - a type found is a usable one (isEventTypeValue); a header rule gives
//    that header's value, a pointer rule the string at the pointer;
//  - every usable type, as a pattern, matches itself;
//  - on valid JSON, the scan for the default rule's "type" member finds
//    what a full parse finds;
//  - the one-pass JSON check (isJsonText) agrees with the parser.
#include <fuzzer/FuzzedDataProvider.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <string>

#include "base/json_member.h"
#include "base/json_pointer.h"
#include "base/json_text.h"
#include "fuzz/fuzz_check.h"
#include "routing/routing_rules.h"

namespace {

using nlohmann::json;

bool isLower(const std::string& s) {
  for (char c : s)
    if (std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

bool sameIgnoringCase(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// The parser's answer: the first top-level "type" member whose value is a
// string.
class FirstTypeMember : public nlohmann::json_sax<json> {
 public:
  std::optional<std::string> found;

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool string(string_t& value) override {
    if (depth_ == 1 && typeNext_) {
      found = value;
      return false;
    }
    return scalar();
  }
  bool binary(binary_t&) override { return scalar(); }
  bool start_object(std::size_t) override { return open(); }
  bool key(string_t& name) override {
    typeNext_ = depth_ == 1 && name == "type";
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool scalar() {
    typeNext_ = false;
    return true;
  }
  bool open() {
    typeNext_ = false;
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }
  size_t depth_ = 0;
  bool typeNext_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  webhooker::HeaderList headers;
  const int headerCount = in.ConsumeIntegralInRange(0, 6);
  for (int i = 0; i < headerCount; ++i) {
    std::string name = in.ConsumeRandomLengthString(40);
    std::string value = in.ConsumeRandomLengthString(80);
    headers.emplace_back(std::move(name), std::move(value));
  }
  const int ruleKind = in.ConsumeIntegralInRange(0, 2);
  const std::string ruleText = in.ConsumeRandomLengthString(40);
  const std::string body = in.ConsumeRemainingBytesAsString();

  webhooker::EventTypeRule rule;
  if (ruleKind == 1) rule = {webhooker::EventTypeSource::kHeader, ruleText};
  if (ruleKind == 2) rule = {webhooker::EventTypeSource::kJsonPointer, ruleText};
  const auto type = webhooker::eventTypeWithoutJq(rule, headers, body);
  if (type) {
    FUZZ_CHECK(webhooker::isEventTypeValue(*type));
    FUZZ_CHECK(webhooker::isEventTypePattern(*type) == (type->find('*') == std::string::npos));
    if (type->find('*') == std::string::npos) FUZZ_CHECK(webhooker::eventTypeMatches(*type, type));
  }
  if (ruleKind == 1) {
    std::optional<std::string> first;
    for (const auto& [name, value] : headers)
      if (sameIgnoringCase(name, ruleText)) {
        first = value;
        break;
      }
    if (type) FUZZ_CHECK(first == type);
  }
  const auto parsed = webhooker::parseJsonText(body);
  FUZZ_CHECK(webhooker::isJsonText(body) ==
             (!parsed.is_discarded() && !body.starts_with("\xEF\xBB\xBF")));
  if (!parsed.is_discarded()) {
    FirstTypeMember parser;
    json::sax_parse(body, &parser);
    FUZZ_CHECK(webhooker::topLevelStringMember(body, "type") == parser.found);
  }
  if (ruleKind == 2 && type) {
    const auto pointer = webhooker::parseJsonPointer(ruleText);
    FUZZ_CHECK(pointer && !parsed.is_discarded());
  }

  const std::string input = webhooker::jqInput(type, headers, body, "2026-01-01T00:00:00.000Z");
  const json doc = json::parse(input, nullptr, false);
  FUZZ_CHECK(doc.is_object() && doc.size() == 4);
  FUZZ_CHECK(doc.contains("event_type") && doc.contains("headers") && doc.contains("body") &&
             doc.contains("received_at"));
  FUZZ_CHECK(doc["headers"].is_object());
  for (const auto& [name, value] : doc["headers"].items()) {
    FUZZ_CHECK(isLower(name));
    FUZZ_CHECK(value.is_string());
  }
  if (type) FUZZ_CHECK(doc["event_type"] == *type);
  if (parsed.is_discarded()) FUZZ_CHECK(doc["body"].is_null());
  else FUZZ_CHECK(doc["body"] == json::parse(body));
  return 0;
}
