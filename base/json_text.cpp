#include "base/json_text.h"

#include <cmath>
#include <cstdlib>

#include "base/hex_digit.h"
#include "base/json_depth.h"
#include "base/utf8.h"

namespace webhooker {

nlohmann::ordered_json parseJsonText(std::string_view text) {
  if (text.find('\0') != std::string_view::npos || !jsonDepthWithin(text))
    return nlohmann::ordered_json(nlohmann::ordered_json::value_t::discarded);
  return nlohmann::ordered_json::parse(text, nullptr, false);
}

namespace {

bool isJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// A recursive-descent check of one JSON text. Recursion is bounded by
// kMaxJsonDepth, past which the text is refused, as parseJsonText refuses it.
class JsonTextCheck {
 public:
  explicit JsonTextCheck(std::string_view text) : text_(text) {}

  bool wholeText() {
    if (!value(0)) return false;
    skipSpace();
    return at_ == text_.size();
  }

 private:
  bool value(size_t depth) {
    skipSpace();
    if (at_ == text_.size()) return false;
    switch (text_[at_]) {
      case '{':
        return object(depth + 1);
      case '[':
        return array(depth + 1);
      case '"':
        return string();
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return number();
    }
  }

  bool object(size_t depth) {
    if (depth > kMaxJsonDepth) return false;
    ++at_;  // {
    skipSpace();
    if (take('}')) return true;
    do {
      skipSpace();
      if (at_ == text_.size() || text_[at_] != '"' || !string()) return false;
      skipSpace();
      if (!take(':') || !value(depth)) return false;
      skipSpace();
    } while (take(','));
    return take('}');
  }

  bool array(size_t depth) {
    if (depth > kMaxJsonDepth) return false;
    ++at_;  // [
    skipSpace();
    if (take(']')) return true;
    do {
      if (!value(depth)) return false;
      skipSpace();
    } while (take(','));
    return take(']');
  }

  // Control characters are refused, escapes checked (a UTF-16 surrogate
  // only as half of a pair), and the raw bytes must be UTF-8.
  bool string() {
    const size_t open = ++at_;
    bool wide = false;
    while (at_ < text_.size()) {
      const auto c = static_cast<unsigned char>(text_[at_]);
      if (c == '"') {
        const std::string_view content = text_.substr(open, at_ - open);
        ++at_;
        return !wide || isValidUtf8(content);
      }
      if (c < 0x20) return false;
      if (c >= 0x80) wide = true;
      if (c == '\\') {
        if (!escape()) return false;
      } else {
        ++at_;
      }
    }
    return false;
  }

  bool escape() {
    ++at_;  // the backslash
    if (at_ == text_.size()) return false;
    const char c = text_[at_++];
    if (c != 'u') return std::string_view("\"\\/bfnrt").find(c) != std::string_view::npos;
    const int unit = hexUnit();
    if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF)) return false;
    if (unit < 0xD800 || unit > 0xDBFF) return true;
    if (!take('\\') || !take('u')) return false;
    const int low = hexUnit();
    return low >= 0xDC00 && low <= 0xDFFF;
  }

  int hexUnit() {
    if (text_.size() - at_ < 4) return -1;
    int unit = 0;
    for (int k = 0; k < 4; ++k) {
      const int digit = hexDigitValue(text_[at_++]);
      if (digit < 0) return -1;
      unit = unit * 16 + digit;
    }
    return unit;
  }

  bool number() {
    const size_t start = at_;
    take('-');
    if (!take('0') && skipDigits() == 0) return false;
    const size_t integerDigits = at_ - start - (text_[start] == '-' ? 1 : 0);
    if (take('.') && skipDigits() == 0) return false;
    bool exponent = false;
    if (take('e') || take('E')) {
      exponent = true;
      if (!take('+')) take('-');
      if (skipDigits() == 0) return false;
    }
    // A double holds every value of up to 308 integer digits; beyond, or
    // with an exponent, nlohmann's strtod may give infinity, which it refuses.
    if (!exponent && integerDigits <= 308) return true;
    const std::string token(text_.substr(start, at_ - start));
    return std::isfinite(std::strtod(token.c_str(), nullptr));
  }

  bool literal(std::string_view word) {
    if (!text_.substr(at_).starts_with(word)) return false;
    at_ += word.size();
    return true;
  }

  size_t skipDigits() {
    const size_t start = at_;
    while (at_ < text_.size() && isDigit(text_[at_])) ++at_;
    return at_ - start;
  }

  void skipSpace() {
    while (at_ < text_.size() && isJsonSpace(text_[at_])) ++at_;
  }

  bool take(char c) {
    if (at_ == text_.size() || text_[at_] != c) return false;
    ++at_;
    return true;
  }

  std::string_view text_;
  size_t at_ = 0;
};

// Where the string token starting with the quote at `open` ends (one past its
// closing quote); the text is valid JSON, so the quote is there.
size_t stringEnd(std::string_view text, size_t open) {
  size_t i = open + 1;
  while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
  return i + 1;
}

}  // namespace

bool isJsonText(std::string_view text) { return JsonTextCheck(text).wholeText(); }

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
