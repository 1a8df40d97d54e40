// The benchmarks' correctness check reports what it must: a benchmark whose
// daemon lost, doubled or changed a delivery, or checked nothing, must not
// print its figures as if they meant something.
#include <doctest/doctest.h>
#include <httplib.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include <string>
#include <vector>

#include "bench/correctness.h"
#include "bench/receiver.h"
#include "bench/seeder.h"
#include "tests/support/contains.h"
#include "tests/support/temp_dir.h"

namespace bench = webhooker::bench;
using webhooker::testing::contains;

namespace {

constexpr int64_t kFirstSeq = 100;
const std::vector<std::string> kBodies = {R"({"n":1})", R"({"n":2})", R"({"n":3})"};

// Three stored events for one target whose receiver is real; deliver()
// posts to it as the daemon would, and markDelivered() records that.
class Backlog {
 public:
  Backlog() {
    bench::Seeder seeder(data_.path());
    const bench::SeededWebhook webhook = seeder.createWebhook("check", {{receiver_.url(), 1}});
    seeder.addEvents(webhook, kBodies.size(), kBodies, kFirstSeq);
    expectation_ = {webhook.id, webhook.targetIds, {}};
    for (size_t i = 0; i < kBodies.size(); ++i)
      expectation_.acceptedSeqs.push_back(kFirstSeq + static_cast<int64_t>(i));
  }

  void deliver(int64_t seq, const std::string& body) {
    httplib::Client client("127.0.0.1", receiver_.port());
    const auto res = client.Post("/hook", {{bench::kSeqHeader, std::to_string(seq)}}, body,
                                 "application/json");
    REQUIRE(res);
  }
  void deliverAll() {
    for (size_t i = 0; i < kBodies.size(); ++i) deliver(kFirstSeq + static_cast<int64_t>(i), kBodies[i]);
  }
  void markDelivered() {
    SQLite::Database db((data_.path() / ("events-" + expectation_.id + ".db")).string(),
                        SQLite::OPEN_READWRITE);
    db.exec("UPDATE deliveries SET status = 'delivered'");
  }
  std::vector<std::string> check(bool drained = true, bool reshaped = false) {
    const std::string target = expectation_.targetIds.at(0);
    return bench::checkCorrectness({data_.path(), {expectation_}, {{target, &receiver_}},
                                    drained ? std::set{target} : std::set<std::string>{},
                                    reshaped ? std::set{target} : std::set<std::string>{}});
  }
  bench::WebhookExpectation& expectation() { return expectation_; }

 private:
  webhooker::testing::TempDir data_;
  bench::BenchReceiver receiver_{2};
  bench::WebhookExpectation expectation_;
};

std::string joined(const std::vector<std::string>& lines) {
  std::string all;
  for (const std::string& l : lines) all += l + "\n";
  return all;
}

}  // namespace

TEST_CASE("every delivery received once with its stored body passes") {
  Backlog backlog;
  backlog.deliverAll();
  backlog.markDelivered();
  CHECK(backlog.check().empty());
}

TEST_CASE("a drained target with a delivery still pending is a violation") {
  Backlog backlog;
  backlog.deliver(kFirstSeq, kBodies[0]);
  const std::string report = joined(backlog.check());
  CHECK(contains(report, "is pending, expected delivered"));
  CHECK(backlog.check(/*drained=*/false).empty());  // a backlog left waiting on purpose
}

TEST_CASE("a body that differs from the stored one is a violation") {
  Backlog backlog;
  backlog.deliver(kFirstSeq, kBodies[0]);
  backlog.deliver(kFirstSeq + 1, R"({"n":"changed"})");
  backlog.deliver(kFirstSeq + 2, kBodies[2]);
  backlog.markDelivered();
  const auto violations = backlog.check();
  REQUIRE(violations.size() == 1);
  CHECK(contains(violations[0], "event seq 101"));
  CHECK(contains(violations[0], "differs from the stored one"));
}

TEST_CASE("a delivery received twice is a violation") {
  Backlog backlog;
  backlog.deliverAll();
  backlog.deliver(kFirstSeq + 2, kBodies[2]);
  backlog.markDelivered();
  const auto violations = backlog.check();
  REQUIRE(violations.size() == 1);
  CHECK(contains(violations[0], "event seq 102"));
  CHECK(contains(violations[0], "got it 2 times"));
}

TEST_CASE("a request that matches no stored delivery is a violation") {
  Backlog backlog;
  backlog.deliverAll();
  backlog.deliver(999, "{}");
  backlog.markDelivered();
  const auto violations = backlog.check();
  REQUIRE(violations.size() == 1);
  CHECK(contains(violations[0], "seq 999, which matches no stored delivery"));
}

TEST_CASE("delivered per the DB but never received is a violation") {
  Backlog backlog;
  backlog.deliver(kFirstSeq, kBodies[0]);
  backlog.markDelivered();
  const std::string report = joined(backlog.check());
  CHECK(contains(report, "event seq 101: delivered to"));
  CHECK(contains(report, "never got it"));
}

TEST_CASE("a run with nothing acknowledged checks nothing, which is a violation") {
  Backlog backlog;
  backlog.expectation().acceptedSeqs.clear();
  const auto violations = backlog.check(false);
  REQUIRE(violations.size() == 1);
  CHECK(contains(violations[0], "no event was acknowledged"));
}

TEST_CASE("a target whose bodies a transform reshapes is checked for all but the body") {
  Backlog backlog;
  backlog.deliver(kFirstSeq, R"({"reshaped":1})");
  backlog.deliver(kFirstSeq + 1, R"({"reshaped":2})");
  backlog.deliver(kFirstSeq + 2, R"({"reshaped":3})");
  backlog.deliver(kFirstSeq + 2, R"({"reshaped":3})");
  backlog.markDelivered();
  const auto violations = backlog.check(true, /*reshaped=*/true);
  REQUIRE(violations.size() == 1);
  CHECK(contains(violations[0], "got it 2 times"));
}
