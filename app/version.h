// The version `webhooker --version` prints.
#pragma once

#include <string>

namespace webhooker::app {

// The meson project version, then `git describe` when built from git:
// "webhooker 0.1.0 (git 71a93ac-dirty)".
std::string versionText();

}  // namespace webhooker::app
