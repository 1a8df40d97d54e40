#include "base/json_pointer.h"

namespace webhooker {

namespace {

// RFC 6901 array-index: "0", or digits without a leading zero. Longer than
// 18 digits cannot be an index of anything in memory (and would overflow).
std::optional<size_t> arrayIndex(const std::string& token) {
  if (token.empty() || token.size() > 18) return std::nullopt;
  if (token.size() > 1 && token[0] == '0') return std::nullopt;
  size_t index = 0;
  for (const char c : token) {
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + static_cast<size_t>(c - '0');
  }
  return index;
}

}  // namespace

std::optional<JsonPointer> parseJsonPointer(std::string_view text) {
  JsonPointer tokens;
  if (text.empty()) return tokens;
  if (text.front() != '/') return std::nullopt;
  std::string token;
  for (size_t i = 1; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '/') {
      tokens.push_back(std::move(token));
      token.clear();
    } else if (text[i] == '~') {
      if (i + 1 >= text.size() || (text[i + 1] != '0' && text[i + 1] != '1')) return std::nullopt;
      token += text[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      token += text[i];
    }
  }
  return tokens;
}

bool replaceAtPointer(nlohmann::ordered_json& doc, const JsonPointer& pointer,
                      const nlohmann::ordered_json& replacement) {
  nlohmann::ordered_json* at = &doc;
  for (const std::string& token : pointer) {
    if (at->is_object()) {
      auto it = at->find(token);
      if (it == at->end()) return false;
      at = &*it;
    } else if (at->is_array()) {
      const auto index = arrayIndex(token);
      if (!index || *index >= at->size()) return false;
      at = &(*at)[*index];
    } else {
      return false;
    }
  }
  *at = replacement;
  return true;
}

}  // namespace webhooker
