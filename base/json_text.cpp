#include "base/json_text.h"

#include "base/json_depth.h"

namespace webhooker {

nlohmann::ordered_json parseJsonText(std::string_view text) {
  if (text.find('\0') != std::string_view::npos || !jsonDepthWithin(text))
    return nlohmann::ordered_json(nlohmann::ordered_json::value_t::discarded);
  return nlohmann::ordered_json::parse(text, nullptr, false);
}

namespace {

bool isJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Where the string token starting with the quote at `open` ends (one past its
// closing quote); the text is valid JSON, so the quote is there.
size_t stringEnd(std::string_view text, size_t open) {
  size_t i = open + 1;
  while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
  return i + 1;
}

}  // namespace

std::string prettyJsonText(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 2);
  size_t depth = 0;
  const auto newLine = [&] {
    out += '\n';
    out.append(depth * 2, ' ');
  };
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (isJsonSpace(c)) {
      ++i;
    } else if (c == '{' || c == '[') {
      size_t next = i + 1;
      while (next < text.size() && isJsonSpace(text[next])) ++next;
      out += c;
      if (next < text.size() && (text[next] == '}' || text[next] == ']')) {  // {} and [] stay
        out += text[next];
        i = next + 1;
      } else {
        ++depth;
        newLine();
        ++i;
      }
    } else if (c == '}' || c == ']') {
      --depth;
      newLine();
      out += c;
      ++i;
    } else if (c == ',') {
      out += ',';
      newLine();
      ++i;
    } else if (c == ':') {
      out += ": ";
      ++i;
    } else if (c == '"') {
      const size_t end = stringEnd(text, i);
      const auto value = nlohmann::json::parse(text.substr(i, end - i), nullptr, false);
      if (value.is_string())
        out += value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      else
        out.append(text.substr(i, end - i));
      i = end;
    } else {  // a number, true, false or null: as written
      size_t end = i;
      while (end < text.size() && !isJsonSpace(text[end]) &&
             std::string_view(",:]}").find(text[end]) == std::string_view::npos)
        ++end;
      out.append(text.substr(i, end - i));
      i = end;
    }
  }
  return out;
}

}  // namespace webhooker
