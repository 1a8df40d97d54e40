// expectJson: a test's check that an HTTP call was answered with `status`,
// and its body as JSON (the body is shown when the status differs).
#pragma once

#include <doctest/doctest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

namespace webhooker::testing {

inline nlohmann::json expectJson(const httplib::Result& res, int status) {
  REQUIRE(res);
  INFO(res->body);
  REQUIRE(res->status == status);
  return nlohmann::json::parse(res->body);
}

}  // namespace webhooker::testing
