// What the management commands print (app/client_commands.cpp): the admin
// API's JSON answers as tables and short views for a terminal. --json skips
// all of this and prints the answer as it came.
//
// Everything here reads answers defensively: a missing or mistyped field
// shows as "-" or 0, never as an exception. Writes to std::cout only.
// Threading: none (one command per process).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace webhooker::app::cli {

// Shows a successful answer.
using Render = std::function<void(const nlohmann::json& answer)>;

// A table cell: strings as they are, booleans as yes/no, missing as "-".
std::string cellText(const nlohmann::json& value);
// object[key], or null when `object` is no object or lacks it.
nlohmann::json field(const nlohmann::json& object, const char* key);
// object[key] as an integer; 0 when it is none.
int64_t integerField(const nlohmann::json& object, const char* key);
// "1 delivery", "2 deliveries".
std::string plural(int64_t n, const char* one, const char* many);
// A target by name when the daemon knows it, by id otherwise.
std::string targetCell(const nlohmann::json& row);

struct Column {
  std::string title;
  std::function<std::string(const nlohmann::json& row)> value;
};
Column fieldColumn(std::string title, const char* key);
// Aligned columns under their titles, one line per element of `rows`.
void printTable(const nlohmann::json& rows, const std::vector<Column>& columns);

// The answer's list `listKey` as a table; showPage adds how to ask for the
// next page.
Render showTable(const char* listKey, std::vector<Column> columns);
Render showPage(const char* listKey, std::vector<Column> columns);
void showObject(const nlohmann::json& answer);

std::vector<Column> webhookColumns();
std::vector<Column> entrypointColumns();
// A webhook-scoped token: id, name, its widest scope, expiry, revocation.
std::vector<Column> tokenColumns();
// Reads each target's stats entry under "stats" (null: none).
std::vector<Column> targetColumns();
std::vector<Column> deliveryColumns();
std::vector<Column> eventColumns();

// From a target's entry of the stats answer: its breaker's state ("-" for
// targets without one) and its backlog (pending and retrying).
std::string breakerText(const nlohmann::json& stats);
int64_t backlogOf(const nlohmann::json& stats);

// `targets show`: the target, then its state, breaker, backlog, oldest
// waiting delivery and FIFO blocker from its "stats".
void showTargetWithHealth(const nlohmann::json& target);
// `events show`: the request, its body, the deliveries and every attempt.
void showEvent(const nlohmann::json& event);
// `status`: the summary client_commands.cpp sums from every webhook's stats.
void showNodeSummary(const nlohmann::json& summary);

}  // namespace webhooker::app::cli
