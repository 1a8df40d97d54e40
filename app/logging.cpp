#include "app/logging.h"

#include <nlohmann/json.hpp>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <chrono>

#include "base/time_format.h"

namespace webhooker::app {

namespace {

// Reads `key=value` or `key="quoted \"value\""` from the front of `s`;
// `wasQuoted` says which.
bool nextField(std::string_view& s, std::string& key, std::string& value, bool& wasQuoted) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  const size_t eq = s.find('=');
  const size_t space = s.find(' ');
  if (s.empty() || eq == std::string_view::npos || (space != std::string_view::npos && space < eq))
    return false;
  key = std::string(s.substr(0, eq));
  s.remove_prefix(eq + 1);
  value.clear();
  wasQuoted = !s.empty() && s.front() == '"';
  if (wasQuoted) {
    // The value ends at the first quote no backslash escapes.
    size_t end = 1;
    while (end < s.size() && s[end] != '"') end += s[end] == '\\' ? 2 : 1;
    const std::string_view quoted = s.substr(0, std::min(end + 1, s.size()));
    s.remove_prefix(quoted.size());
    // A JSON string (the log target writes the body as one) keeps its \n,
    // \t and \uXXXX; anything else is unquoted loosely, \x as x.
    const auto parsed = nlohmann::json::parse(quoted, nullptr, false);
    if (parsed.is_string()) {
      value = parsed.get<std::string>();
    } else {
      std::string_view inner = quoted.substr(1);
      if (end < quoted.size()) inner.remove_suffix(1);  // the closing quote
      for (size_t i = 0; i < inner.size(); ++i) {
        if (inner[i] == '\\' && i + 1 < inner.size()) ++i;
        value.push_back(inner[i]);
      }
    }
  } else {
    const size_t end = std::min(s.find(' '), s.size());
    value = std::string(s.substr(0, end));
    s.remove_prefix(end);
  }
  return true;
}

// An unquoted value written the way JSON writes a number (an integer or a
// decimal, no leading zero: not an id like 0123) is one: status_code=200
// comes out as 200, as a log pipeline compares it.
nlohmann::ordered_json fieldValue(const std::string& value, bool quoted) {
  if (quoted || value.empty()) return value;
  size_t i = value[0] == '-' ? 1 : 0;
  const size_t digits = i;
  while (i < value.size() && std::isdigit(static_cast<unsigned char>(value[i]))) ++i;
  if (i == digits || i - digits > 15 || (value[digits] == '0' && i - digits > 1)) return value;
  if (i < value.size() && value[i] == '.') {
    const size_t fraction = ++i;
    while (i < value.size() && std::isdigit(static_cast<unsigned char>(value[i]))) ++i;
    if (i == fraction) return value;
  }
  if (i != value.size()) return value;
  return nlohmann::ordered_json::parse(value);
}

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string line =
        jsonLogLine(formatTime(msg.time), std::string(spdlog::level::to_string_view(msg.level).data(),
                                                      spdlog::level::to_string_view(msg.level).size()),
                    std::string(msg.payload.data(), msg.payload.size())) +
        "\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

std::string jsonLogLine(const std::string& time, const std::string& level,
                        const std::string& message) {
  nlohmann::ordered_json line{{"time", time}, {"level", level}};
  std::string_view rest(message);
  const size_t space = std::min(rest.find(' '), rest.size());
  line["event"] = std::string(rest.substr(0, space));
  rest.remove_prefix(space);
  std::string key, value;
  bool quoted = false;
  while (nextField(rest, key, value, quoted)) {
    if (key == "time" || key == "level" || key == "event") key = "field_" + key;
    line[key] = fieldValue(value, quoted);
  }
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (!rest.empty()) line["message"] = std::string(rest);  // what did not parse as fields
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void setupLogging(const std::string& level, const std::string& format) {
  auto logger = spdlog::stderr_logger_mt("webhooker");
  if (format == "json")
    logger->set_formatter(std::make_unique<JsonFormatter>());
  else
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace webhooker::app
