// OpenTickets: a wait for the tickets opened before it returns once they
// are given back, whatever is opened after; with a deadline it says when
// some are still held.
#include <doctest/doctest.h>

#include <chrono>
#include <future>

#include "base/open_tickets.h"

namespace {

using namespace std::chrono_literals;
using webhooker::OpenTickets;

TEST_CASE("a wait ends when the tickets opened before it are given back, not the later ones") {
  OpenTickets tickets;
  OpenTickets::Ticket earlier = tickets.open();
  auto waited = std::async(std::launch::async, [&] { return tickets.waitForEarlier(); });
  CHECK(waited.wait_for(100ms) == std::future_status::timeout);  // `earlier` is held

  std::this_thread::sleep_for(20ms);  // the wait has begun: what opens now is later
  OpenTickets::Ticket later = tickets.open();
  OpenTickets::Ticket copy = earlier;
  earlier.reset();
  CHECK(waited.wait_for(100ms) == std::future_status::timeout);  // a copy still holds it
  copy.reset();
  REQUIRE(waited.wait_for(10s) == std::future_status::ready);
  CHECK(waited.get());
}

TEST_CASE("a wait with a deadline says false while an earlier ticket is held, true once none is") {
  OpenTickets tickets;
  CHECK(tickets.waitForEarlier(std::chrono::steady_clock::now()));  // nothing open
  OpenTickets::Ticket held = tickets.open();
  CHECK_FALSE(tickets.waitForEarlier(std::chrono::steady_clock::now() + 50ms));
  held.reset();
  CHECK(tickets.waitForEarlier(std::chrono::steady_clock::now() + 50ms));
}

}  // namespace
