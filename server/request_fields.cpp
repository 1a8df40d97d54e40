#include "server/request_fields.h"

#include <fmt/format.h>

#include <algorithm>

namespace webhooker::server {

namespace {

Error invalidField(const char* key, std::string_view what) {
  return makeError(error_code::kInvalidField, fmt::format("{} must be {}", key, what));
}

}  // namespace

Result<void> refuseUnknownFields(const nlohmann::json& body,
                                 std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : body.items())
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      return makeError(error_code::kUnknownField, fmt::format("{} is not a known field", key));
  return {};
}

Result<std::optional<std::string>> stringField(const nlohmann::json& body, const char* key,
                                               size_t maxLength, bool allowEmpty) {
  if (!body.contains(key)) return std::optional<std::string>();
  const auto& v = body.at(key);
  const std::string what = fmt::format("a string of {} to {} characters", allowEmpty ? 0 : 1,
                                       maxLength);
  if (!v.is_string()) return invalidField(key, what);
  const std::string& s = v.get_ref<const std::string&>();
  if ((!allowEmpty && s.empty()) || s.size() > maxLength) return invalidField(key, what);
  return std::optional<std::string>(s);
}

Result<std::optional<int64_t>> intField(const nlohmann::json& body, const char* key, int64_t min,
                                        int64_t max) {
  if (!body.contains(key)) return std::optional<int64_t>();
  const auto& v = body.at(key);
  const std::string what = fmt::format("an integer from {} to {}", min, max);
  if (!v.is_number_integer()) return invalidField(key, what);
  // Unsigned values beyond int64 range are out of bounds too.
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max))
    return invalidField(key, what);
  const int64_t n = v.get<int64_t>();
  if (n < min || n > max) return invalidField(key, what);
  return std::optional<int64_t>(n);
}

Result<std::optional<bool>> boolField(const nlohmann::json& body, const char* key) {
  if (!body.contains(key)) return std::optional<bool>();
  const auto& v = body.at(key);
  if (!v.is_boolean()) return invalidField(key, "true or false");
  return std::optional<bool>(v.get<bool>());
}

}  // namespace webhooker::server
