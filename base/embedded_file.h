// EmbeddedFile: a file compiled into the binary by scripts/embed.py — its
// path relative to the folder it came from, and its bytes. Static storage:
// valid for the whole life of the process.
#pragma once

#include <span>
#include <string_view>

namespace webhooker {

struct EmbeddedFile {
  std::string_view path;  // "index.html", "assets/app.js"
  std::string_view content;
};

}  // namespace webhooker
