// Precompiled once per test executable: the heavy third-party headers almost
// every test file includes (parsing them was about a third of a test file's
// compile time). No include guard: it is compiled as a main file. Only headers from outside the project belong here, so a
// change to our own code never invalidates it.

#include <doctest/doctest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <SQLiteCpp/SQLiteCpp.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>
