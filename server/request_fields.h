// Reading typed fields out of an admin API request body. Every reader
// refuses a wrong type with "invalid_field" naming the field, so bad input
// is rejected before anything is written.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace webhooker::server {

// The longest name a webhook or a target may have.
inline constexpr size_t kMaxNameLength = 200;

// "unknown_field" for any key of `body` not in `allowed`.
Result<void> refuseUnknownFields(const nlohmann::json& body,
                                 std::initializer_list<std::string_view> allowed);

// Absent → nullopt. Present: a string of 1..maxLength characters (0.. when
// allowEmpty).
Result<std::optional<std::string>> stringField(const nlohmann::json& body, const char* key,
                                               size_t maxLength, bool allowEmpty = false);
// Absent → nullopt. Present: an integer within [min, max].
Result<std::optional<int64_t>> intField(const nlohmann::json& body, const char* key, int64_t min,
                                        int64_t max);
// Absent → nullopt. Present: true or false.
Result<std::optional<bool>> boolField(const nlohmann::json& body, const char* key);

}  // namespace webhooker::server
