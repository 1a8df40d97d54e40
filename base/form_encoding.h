// application/x-www-form-urlencoded text (query strings and form bodies):
// percent-decoding and the name/value pairs, and a form body as JSON fields
// for routing and jq.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace webhooker {

// "%41b+c" → "Ab+c" (or "Ab c" with plusIsSpace, for forms and query
// strings). A broken escape stays as it is.
std::string decodeUrl(std::string_view text, bool plusIsSpace);

// "a=1&b=%20&a=2" → [(a, 1), (b, " "), (a, 2)], in the order sent; a name
// without "=" has the value "". Empty pieces ("a=1&&b=2") are skipped.
std::vector<std::pair<std::string, std::string>> parseFormPairs(std::string_view text);

// A form body as the text of a JSON object: each name's value a string, or
// an array of strings when the name is repeated. A form that is one
// `payload` field holding a JSON object or array (Slack's interactive
// payloads) is that JSON. Bytes that are not UTF-8 become U+FFFD.
std::string formFieldsJson(std::string_view body);

// Whether a Content-Type header names a form body.
bool isFormContentType(std::string_view contentType);

}  // namespace webhooker
