// Log setup: one line per event on stderr, "<time> <level> <event.name>
// key=value ...". stdout is kept for what a person must read once (the
// generated admin token, the listening URL).
#pragma once

#include <string>

namespace webhooker::app {

void setupLogging(const std::string& level);

}  // namespace webhooker::app
