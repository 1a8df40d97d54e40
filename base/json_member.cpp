#include "base/json_member.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstring>

#include "base/json_depth.h"

namespace webhooker {
namespace {

// A cursor over the text; every step returns false where the structure
// breaks or the text ends.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {
    if (text_.starts_with("\xEF\xBB\xBF")) pos_ = 3;
  }

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }

  void skipSpace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }

  bool consume(char c) {
    skipSpace();
    if (atEnd() || peek() != c) return false;
    ++pos_;
    return true;
  }

  // A string starting at the cursor, quotes included, as written; `escaped`
  // tells whether it needs decoding.
  bool string(std::string_view& raw, bool& escaped) {
    const size_t start = pos_;
    escaped = false;
    ++pos_;  // the opening quote
    while (true) {
      const void* quote = std::memchr(text_.data() + pos_, '"', text_.size() - pos_);
      if (!quote) return false;
      const size_t at = static_cast<const char*>(quote) - text_.data();
      if (std::memchr(text_.data() + pos_, '\\', at - pos_)) escaped = true;
      size_t backslashes = 0;
      while (at - backslashes > pos_ && text_[at - backslashes - 1] == '\\') ++backslashes;
      pos_ = at + 1;
      if (backslashes % 2 == 0) break;
    }
    raw = text_.substr(start, pos_ - start);
    return true;
  }

  // Any value at the cursor that is not a string the caller wants.
  bool skipValue() {
    skipSpace();
    if (atEnd()) return false;
    std::string_view raw;
    bool escaped = false;
    switch (peek()) {
      case '"': return string(raw, escaped);
      case '{':
      case '[': return skipNested();
      default: return skipScalar();
    }
  }

 private:
  // An object or array: brackets must match, and nesting stays within
  // kMaxJsonDepth counting the top-level object.
  bool skipNested() {
    std::array<char, kMaxJsonDepth> closers{};
    size_t depth = 0;
    std::string_view raw;
    bool escaped = false;
    while (!atEnd()) {
      const char c = peek();
      if (c == '"') {
        if (!string(raw, escaped)) return false;
        continue;
      }
      ++pos_;
      if (c == '{' || c == '[') {
        if (depth + 1 >= kMaxJsonDepth) return false;
        closers[depth++] = c == '{' ? '}' : ']';
      } else if (c == '}' || c == ']') {
        if (closers[--depth] != c) return false;
        if (depth == 0) return true;
      }
    }
    return false;
  }

  // true, false, null or a number: up to the next separator.
  bool skipScalar() {
    const size_t start = pos_;
    while (!atEnd() && std::strchr(",}] \t\n\r", peek()) == nullptr) ++pos_;
    return pos_ > start && std::strchr("-0123456789tfn", text_[start]) != nullptr;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// A string as written (quotes included), decoded.
std::optional<std::string> decoded(std::string_view raw, bool escaped) {
  if (!escaped) return std::string(raw.substr(1, raw.size() - 2));
  const auto value = nlohmann::json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (!value.is_string()) return std::nullopt;
  return value.get<std::string>();
}

bool sameString(std::string_view raw, bool escaped, std::string_view name) {
  return escaped ? decoded(raw, escaped) == name : raw.substr(1, raw.size() - 2) == name;
}

}  // namespace

std::optional<std::string> topLevelStringMember(std::string_view text, std::string_view name) {
  Scanner in(text);
  if (!in.consume('{')) return std::nullopt;
  in.skipSpace();
  if (in.consume('}')) return std::nullopt;
  do {
    in.skipSpace();
    std::string_view key;
    bool keyEscaped = false;
    if (in.atEnd() || in.peek() != '"' || !in.string(key, keyEscaped) || !in.consume(':'))
      return std::nullopt;
    in.skipSpace();
    if (in.atEnd()) return std::nullopt;
    if (in.peek() == '"' && sameString(key, keyEscaped, name)) {
      std::string_view value;
      bool valueEscaped = false;
      if (!in.string(value, valueEscaped)) return std::nullopt;
      return decoded(value, valueEscaped);
    }
    if (!in.skipValue()) return std::nullopt;
  } while (in.consume(','));
  return std::nullopt;
}

}  // namespace webhooker
