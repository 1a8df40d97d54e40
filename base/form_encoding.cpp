#include "base/form_encoding.h"

#include <nlohmann/json.hpp>

#include "base/ascii_case.h"
#include "base/hex_digit.h"
#include "base/json_depth.h"

namespace webhooker {

std::string decodeUrl(std::string_view text, bool plusIsSpace) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      const int hi = hexDigitValue(text[i + 1]);
      const int lo = hexDigitValue(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += plusIsSpace && c == '+' ? ' ' : c;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> parseFormPairs(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    const size_t amp = std::min(text.find('&'), text.size());
    const std::string_view pair = text.substr(0, amp);
    text.remove_prefix(std::min(amp + 1, text.size()));
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    out.emplace_back(decodeUrl(name, true), decodeUrl(value, true));
  }
  return out;
}

std::string formFieldsJson(std::string_view body) {
  using nlohmann::json;
  const auto pairs = parseFormPairs(body);
  if (pairs.size() == 1 && pairs.front().first == "payload" &&
      jsonDepthWithin(pairs.front().second)) {
    json inner = json::parse(pairs.front().second, nullptr, /*allow_exceptions=*/false);
    if (inner.is_object() || inner.is_array())
      return inner.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  json fields = json::object();
  for (const auto& [name, value] : pairs) {
    const std::string& key = name;
    json text = value;
    auto it = fields.find(key);
    if (it == fields.end()) {
      fields[key] = std::move(text);
    } else {
      if (!it->is_array()) *it = json::array({std::move(*it)});
      it->push_back(std::move(text));
    }
  }
  return fields.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool isFormContentType(std::string_view contentType) {
  constexpr std::string_view kForm = "application/x-www-form-urlencoded";
  while (!contentType.empty() && contentType.front() == ' ') contentType.remove_prefix(1);
  if (contentType.size() < kForm.size() ||
      !equalsIgnoringCase(contentType.substr(0, kForm.size()), kForm))
    return false;
  const std::string_view rest = contentType.substr(kForm.size());
  return rest.empty() || rest.front() == ';' || rest.front() == ' ';
}

}  // namespace webhooker
