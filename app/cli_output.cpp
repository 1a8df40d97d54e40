// The CLI's tables and views; see cli_output.h.
#include "app/cli_output.h"

#include <algorithm>
#include <iostream>
#include <utility>

namespace webhooker::app::cli {

using nlohmann::json;

namespace {

std::string durationText(int64_t seconds) {
  auto two = [](int64_t n) { return (n < 10 ? "0" : "") + std::to_string(n); };
  if (seconds < 60) return std::to_string(seconds) + "s";
  if (seconds < 3600) return std::to_string(seconds / 60) + "m" + two(seconds % 60) + "s";
  if (seconds < 86400) return std::to_string(seconds / 3600) + "h" + two(seconds / 60 % 60) + "m";
  return std::to_string(seconds / 86400) + "d" + two(seconds / 3600 % 24) + "h";
}

std::string stateText(const json& target) {
  const json reason = field(target, "disabled_reason");
  return cellText(field(target, "state")) +
         (reason.is_string() ? " (" + reason.get<std::string>() + ")" : "");
}

std::string oldestWaitingText(const json& stats) {
  if (field(stats, "oldest_waiting").is_null()) return "-";
  return durationText(integerField(stats, "oldest_pending_age_seconds"));
}

json fifoBlocker(const json& stats) {
  const json waiting = field(stats, "oldest_waiting");
  if (field(stats, "ordering") != "fifo" || field(waiting, "status") != "retrying") return json();
  return waiting;
}

constexpr size_t kMaxCellText = 60;

std::string shortened(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (text.size() > kMaxCellText) text = text.substr(0, kMaxCellText - 3) + "...";
  return text;
}

}  // namespace



// A table cell: strings as they are, booleans as yes/no, missing as "-".

std::string cellText(const json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  return value.dump();
}

json field(const json& object, const char* key) {
  return object.is_object() && object.contains(key) ? object[key] : json();
}

Column fieldColumn(std::string title, const char* key) {
  return {std::move(title), [key](const json& row) { return cellText(field(row, key)); }};
}

void printTable(const json& rows, const std::vector<Column>& columns) {
  std::vector<std::vector<std::string>> cells(1);
  for (const Column& c : columns) cells[0].push_back(c.title);
  if (rows.is_array()) {
    for (const json& row : rows) {
      std::vector<std::string>& line = cells.emplace_back();
      for (const Column& c : columns) line.push_back(c.value(row));
    }
  }
  std::vector<size_t> widths(columns.size(), 0);
  for (const auto& line : cells)
    for (size_t i = 0; i < line.size(); ++i) widths[i] = std::max(widths[i], line[i].size());
  for (const auto& line : cells) {
    std::string text;
    for (size_t i = 0; i < line.size(); ++i) {
      text += line[i];
      if (i + 1 < line.size()) text += std::string(widths[i] - line[i].size() + 2, ' ');
    }
    std::cout << text << "\n";
  }
}

Render showTable(const char* listKey, std::vector<Column> columns) {
  return [listKey, columns = std::move(columns)](const json& answer) {
    printTable(field(answer, listKey), columns);
  };
}

std::string plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

void showObject(const json& answer) { std::cout << answer.dump(2) << "\n"; }

std::vector<Column> webhookColumns() {
  return {fieldColumn("ID", "id"), fieldColumn("NAME", "name"),
          fieldColumn("RETENTION_DAYS", "retention_days"),
          {"ENTRYPOINTS", [](const json& row) {
             const json eps = field(row, "entrypoints");
             return std::to_string(eps.is_array() ? eps.size() : 0);
           }}};
}

std::vector<Column> entrypointColumns() {
  return {fieldColumn("ID", "id"), fieldColumn("NAME", "name"), fieldColumn("URL", "url"),
          fieldColumn("ACTIVE", "active"),
          fieldColumn("CREATED_AT", "created_at")};
}

std::vector<Column> tokenColumns() {
  return {fieldColumn("ID", "id"), fieldColumn("NAME", "name"),
          {"SCOPE", [](const json& row) {
             // The widest: the list is the scope with the ones it includes.
             const json scopes = field(row, "scopes");
             return scopes.is_array() && !scopes.empty() ? cellText(scopes.back()) : "-";
           }},
          fieldColumn("EXPIRES_AT", "expires_at"), fieldColumn("REVOKED_AT", "revoked_at")};
}

// "125" seconds → "2m05s"; whole units only as far as they help a reader.

int64_t integerField(const json& object, const char* key) {
  const json value = field(object, key);
  return value.is_number_integer() ? value.get<int64_t>() : 0;
}

// "disabled (gone)": the engine's reason goes with its state.

// From a target's stats entry (withStats): "open", or "-" for a target

// without a breaker (database, log).

std::string breakerText(const json& stats) {
  return cellText(field(field(stats, "breaker"), "state"));
}

// Deliveries waiting for the target: pending and retrying.

int64_t backlogOf(const json& stats) {
  const json counts = field(stats, "deliveries");
  return integerField(counts, "pending") + integerField(counts, "retrying");
}

// How long the oldest delivery that is due has waited; "-" when none waits.

// A FIFO target's head delivery while it is being retried holds every later

// one back (the console's "blocked by delivery ...").

std::vector<Column> targetColumns() {
  auto stats = [](std::string (*text)(const json&)) {
    return [text](const json& row) { return text(field(row, "stats")); };
  };
  return {fieldColumn("ID", "id"), fieldColumn("NAME", "name"), fieldColumn("TYPE", "type"),
          {"STATE", stateText},
          {"BREAKER", stats(breakerText)},
          fieldColumn("ORDERING", "ordering"),
          {"BACKLOG", [](const json& row) { return std::to_string(backlogOf(field(row, "stats"))); }},
          {"OLDEST_WAITING", stats(oldestWaitingText)},
          {"BLOCKED_BY",
           [](const json& row) { return cellText(field(fifoBlocker(field(row, "stats")), "delivery_id")); }},
          // http targets have config.url, slack ones config.webhook_url; both
          // come back redacted.
          {"URL", [](const json& row) {
             const json config = field(row, "config");
             const json url = field(config, "url");
             return cellText(url.is_null() ? field(config, "webhook_url") : url);
           }}};
}

// `targets show`: the target as the API has it, then what the stats API

// knows of it.

void showTargetWithHealth(const json& target) {
  json shown = target;
  shown.erase("stats");
  std::cout << shown.dump(2) << "\n\n";
  const json stats = field(target, "stats");
  const json breaker = field(stats, "breaker");
  std::string breakerLine = breakerText(stats);
  if (breaker.is_object() && breakerLine != "closed")
    breakerLine += ", " + plural(integerField(breaker, "consecutive_failures"),
                                 "consecutive failure", "consecutive failures") +
                   ", next try in " + durationText(integerField(breaker, "retry_in_ms") / 1000);
  const json counts = field(stats, "deliveries");
  const json waiting = field(stats, "oldest_waiting");
  std::string waitingLine = "-";
  if (waiting.is_object())
    waitingLine = "delivery " + cellText(field(waiting, "delivery_id")) + " (" +
                  cellText(field(waiting, "status")) + ", " +
                  plural(integerField(waiting, "attempts"), "attempt", "attempts") +
                  "), due for " + oldestWaitingText(stats);
  const json blocker = fifoBlocker(stats);
  std::cout << "state           " << stateText(target) << "\n"
            << "breaker         " << breakerLine << "\n"
            << "backlog         " << backlogOf(stats) << " (" << integerField(counts, "pending")
            << " pending, " << integerField(counts, "retrying") << " retrying)\n"
            << "oldest waiting  " << waitingLine << "\n"
            << "fifo blocked by "
            << (blocker.is_null() ? "-" : "delivery " + cellText(field(blocker, "delivery_id")))
            << "\n";
}

// Long free text (errors) cut for a table; --json shows it whole.

// A target by name when the daemon knows it, by id otherwise.

std::string targetCell(const json& row) {
  const json name = field(row, "target_name");
  return name.is_string() ? name.get<std::string>() : cellText(field(row, "target_id"));
}

std::vector<Column> deliveryColumns() {
  return {fieldColumn("ID", "id"),
          fieldColumn("EVENT", "event_id"),
          fieldColumn("EVENT_TYPE", "event_type"),
          {"TARGET", targetCell},
          fieldColumn("STATUS", "status"),
          fieldColumn("ATTEMPTS", "attempts"),
          fieldColumn("LAST_CODE", "last_status_code"),
          fieldColumn("REASON", "failure_reason"),
          {"LAST_ERROR",
           [](const json& row) { return shortened(cellText(field(row, "last_error"))); }},
          fieldColumn("UPDATED_AT", "updated_at")};
}

std::vector<Column> eventColumns() {
  return {fieldColumn("ID", "id"), fieldColumn("RECEIVED_AT", "received_at"),
          fieldColumn("EVENT_TYPE", "event_type"), fieldColumn("METHOD", "method"), fieldColumn("CONTENT_TYPE", "content_type"),
          fieldColumn("SIZE", "body_size"),
          // One "target=status" per delivery.
          {"DELIVERIES", [](const json& row) {
             std::string text;
             const json deliveries = field(row, "deliveries");
             if (deliveries.is_array())
               for (const json& d : deliveries)
                 text += (text.empty() ? "" : ", ") + targetCell(d) + "=" +
                         cellText(field(d, "status"));
             return text.empty() ? std::string("-") : text;
           }}};
}

// A page of a listing, then how to ask for the next one.

Render showPage(const char* listKey, std::vector<Column> columns) {
  return [listKey, columns = std::move(columns)](const json& answer) {
    printTable(field(answer, listKey), columns);
    const json next = field(answer, "next_cursor");
    if (next.is_string()) std::cout << "\nmore: --cursor " << next.get<std::string>() << "\n";
  };
}

void showEvent(const json& e) {
  std::cout << "event        " << cellText(field(e, "id")) << "\n"
            << "received_at  " << cellText(field(e, "received_at")) << "\n"
            << "event_type   " << cellText(field(e, "event_type")) << "\n"
            << "request      " << cellText(field(e, "method")) << " " << cellText(field(e, "path"));
  const json query = field(e, "query");
  if (query.is_string() && !query.get<std::string>().empty())
    std::cout << "?" << query.get<std::string>();
  std::cout << "\nfrom         " << cellText(field(e, "remote_addr")) << "\n"
            << "content_type " << cellText(field(e, "content_type")) << "\n"
            << "body_size    " << cellText(field(e, "body_size")) << "\n";
  const json headers = field(e, "headers");
  std::cout << "headers\n";
  if (headers.is_array())
    for (const json& h : headers)
      if (h.is_array() && h.size() == 2)
        std::cout << "  " << cellText(h[0]) << ": " << cellText(h[1]) << "\n";
  if (field(e, "body_encoding") == "base64")
    std::cout << "body (base64)\n" << cellText(field(e, "body")) << "\n";
  else
    std::cout << "body\n" << cellText(field(e, "body")) << "\n";

  std::cout << "\n";
  printTable(field(e, "deliveries"),
             {fieldColumn("DELIVERY", "id"), {"TARGET", targetCell},
              fieldColumn("TYPE", "target_type"), fieldColumn("STATUS", "status"),
              fieldColumn("ATTEMPTS", "attempts"), fieldColumn("REASON", "failure_reason")});
  // Every attempt of every delivery, with the delivery it belongs to.
  json attempts = json::array();
  const json deliveries = field(e, "deliveries");
  if (deliveries.is_array())
    for (const json& d : deliveries) {
      const json results = field(d, "results");
      if (!results.is_array()) continue;
      for (json r : results) {
        r["delivery_id"] = field(d, "id");
        attempts.push_back(std::move(r));
      }
    }
  std::cout << "\n";
  printTable(attempts,
             {fieldColumn("DELIVERY", "delivery_id"), fieldColumn("ATTEMPT", "attempt"),
              fieldColumn("CODE", "status_code"), fieldColumn("OK", "success"),
              fieldColumn("DURATION_MS", "duration_ms"),
              {"ERROR", [](const json& row) { return shortened(cellText(field(row, "error"))); }},
              fieldColumn("AT", "created_at")});
}

void showNodeSummary(const json& n) {
  const json oldest = field(n, "oldest_pending");
  std::cout << "webhooks        " << integerField(n, "webhooks") << "\n"
            << "targets         " << integerField(n, "targets") << " ("
            << integerField(n, "targets_disabled") << " disabled)\n"
            << "backlog         " << integerField(n, "backlog") << " ("
            << integerField(n, "pending") << " pending, " << integerField(n, "retrying")
            << " retrying)\n"
            << "breakers open   " << integerField(n, "breakers_open") << "\n"
            << "oldest pending  ";
  if (oldest.is_object())
    std::cout << durationText(integerField(n, "oldest_pending_age_seconds")) << " (webhook "
              << cellText(field(oldest, "webhook_name")) << ", target "
              << cellText(field(oldest, "target_name")) << ")\n";
  else
    std::cout << "-\n";
  // The backlog and the oldest pending delivery are the sampler's count.
  std::cout << "counted         " << durationText(integerField(n, "sample_age_seconds"))
            << " ago (" << cellText(field(n, "sampled_at")) << ")\n";
}

}  // namespace webhooker::app::cli
