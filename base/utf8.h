// UTF-8 validity, for deciding whether stored bytes can be shown as text.
#pragma once

#include <string_view>

namespace webhooker {

// True when `s` is well-formed UTF-8: no overlong forms, surrogates, values
// past U+10FFFF or sequences cut short.
bool isValidUtf8(std::string_view s);

}  // namespace webhooker
