// The test executable's main: doctest's, except that a run in which no test
// case passed the filters fails. Every meson test selects its file with
// --source-file, and a misspelt or renamed file would otherwise pass having
// run nothing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "routing/jq_worker.h"

namespace {

unsigned testCasesRun = 0;

struct RunCounter : doctest::IReporter {
  explicit RunCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    testCasesRun = stats.numTestCasesPassingFilters;
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("run_counter", 1, RunCounter);

}  // namespace

int main(int argc, char** argv) {
  // Tests that run jq start this executable again as the jq worker.
  if (const auto worker = webhooker::runJqWorkerIfAsked(argc, argv)) return *worker;
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit()) return result;  // --help, --list-test-cases, ...
  if (result == 0 && testCasesRun == 0) {
    std::fprintf(stderr, "no test case matched the filters\n");
    return 1;
  }
  return result;
}
