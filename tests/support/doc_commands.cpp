#include "tests/support/doc_commands.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace webhooker::testing {
namespace {

// True while `text` has an unclosed '...' or "..." (shell quoting, no escapes
// inside single quotes).
bool openQuote(const std::string& text) {
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == 0 && (c == '\'' || c == '"')) quote = c;
    else if (quote == '"' && c == '\\') ++i;
    else if (c == quote) quote = 0;
  }
  return quote != 0;
}

}  // namespace

std::vector<DocCommand> docCommands(const std::filesystem::path& file, const std::string& marker,
                                    const std::function<bool(const std::string&)>& startsCommand) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  std::vector<DocCommand> commands;
  bool inCode = false;
  bool selected = false;
  bool continuing = false;
  int lineNo = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    if (line.starts_with("```")) {
      inCode = !inCode;
      selected = inCode && line.find(marker, 3) != std::string::npos;
      continuing = false;
      continue;
    }
    if (!selected) continue;
    if (continuing) {
      commands.back().command += "\n" + line;
    } else if (startsCommand(line)) {
      commands.push_back({file.filename().string() + ":" + std::to_string(lineNo), line});
    } else {
      continue;
    }
    // A comment line stands alone, whatever quotes it holds.
    const std::string& command = commands.back().command;
    continuing = !command.starts_with("#") && (openQuote(command) || command.ends_with("\\"));
  }
  return commands;
}

void replaceAll(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

std::vector<std::filesystem::path> documentationFiles() {
  const char* source = std::getenv("WEBHOOKER_SOURCE_DIR");
  if (!source) throw std::runtime_error("WEBHOOKER_SOURCE_DIR is not set (tests/meson.build sets it)");
  const std::filesystem::path root(source);
  std::vector<std::filesystem::path> docs;
  for (const auto& entry : std::filesystem::directory_iterator(root / "docs"))
    if (entry.path().extension() == ".md") docs.push_back(entry.path());
  std::sort(docs.begin(), docs.end());
  docs.insert(docs.begin(), root / "README.md");
  return docs;
}

}  // namespace webhooker::testing
