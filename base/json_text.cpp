#include "base/json_text.h"

#include "base/json_depth.h"

namespace webhooker {

nlohmann::ordered_json parseJsonText(std::string_view text) {
  if (text.find('\0') != std::string_view::npos || !jsonDepthWithin(text))
    return nlohmann::ordered_json(nlohmann::ordered_json::value_t::discarded);
  return nlohmann::ordered_json::parse(text, nullptr, false);
}

}  // namespace webhooker
