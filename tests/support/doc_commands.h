// The shell commands of the documentation's fenced code blocks, as written:
// the sqlite3 recipes and the README's walk-through run them as tests.
// Reads files only; throws std::runtime_error when a file cannot be read.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace webhooker::testing {

struct DocCommand {
  std::string where;    // file:line of its first line, for failure messages
  std::string command;  // as written, continuation lines included
};

// The commands of `file`'s fenced code blocks whose opening line's info
// string (what follows the ```) contains `marker` ("" for every block). A
// command starts on a line `startsCommand` accepts and goes on while a quote
// is open or a line ends with a backslash (a comment line stands alone);
// other lines are skipped.
std::vector<DocCommand> docCommands(const std::filesystem::path& file, const std::string& marker,
                                    const std::function<bool(const std::string&)>& startsCommand);

// Every `from` in `text` replaced by `to`: a documented command adapted to
// the test's folder and ports.
void replaceAll(std::string& text, const std::string& from, const std::string& to);

// README.md, then docs/*.md by name, under WEBHOOKER_SOURCE_DIR (set by
// tests/meson.build): where the documentation's commands live.
std::vector<std::filesystem::path> documentationFiles();

}  // namespace webhooker::testing
