// Log setup: one line per event on stderr. Every message is written as
// "<event.name> key=value key=\"quoted value\" ..."; the text format prints
// it after the time and level, the json format turns it into one JSON
// object per line: {"time", "level", "event", <key>: <value>, ...}.
// stdout is kept for what a person must read once (the generated admin
// token, the listening URL).
#pragma once

#include <string>

namespace webhooker::app {

// level: trace|debug|info|warning (or warn)|error; format: text|json.
void setupLogging(const std::string& level, const std::string& format);

// The JSON line for one message (exposed for tests).
std::string jsonLogLine(const std::string& time, const std::string& level,
                        const std::string& message);

}  // namespace webhooker::app
