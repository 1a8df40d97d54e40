// The README walked as a new user walks it: the commands of every code block
// marked `sh walk-through` (README.md first, then docs/*.md; found at run
// time, so the test follows the blocks wherever they move), top to bottom,
// in one folder, against the real daemon and the README's own receiver:
//   - `python3 -c ...` (the receiver) starts in the background on a free
//     port, which replaces the README's port in every later command;
//   - `make run ARGS="..."` starts the daemon with those flags; its address
//     replaces 127.0.0.1:8080, and the token it was given replaces whk_...;
//     the CLI is found only through the PATH the README sets ($PWD/build/app
//     becomes this build's folder of the binary);
//   - `NAME=<path>` takes that field of the previous command's JSON answer
//     (`WH=<id>; EP=<entrypoints[0].id>`); other assignments carry over to
//     every later command;
//   - `# {"deliveries":N,...}` after a command is what its answer must hold;
//     `# the receiver gets X`: X must reach the receiver.
// Every other command runs through bash and must exit 0, write nothing to
// stderr, and answer no JSON error. A routing example that leaves the
// shared entrypoint unable to type the next example's events fails here.
#include <doctest/doctest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/daemon_api.h"
#include "tests/support/daemon_process.h"
#include "tests/support/doc_commands.h"
#include "tests/support/eventually.h"
#include "tests/support/receiver.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text_pattern.h"

namespace webhooker::testing {
namespace {

using nlohmann::json;

std::vector<DocCommand> walkthrough() {
  std::vector<DocCommand> commands;
  for (const std::filesystem::path& file : documentationFiles())
    for (DocCommand& c : docCommands(file, "walk-through",
                                     [](const std::string& line) { return !line.empty(); }))
      commands.push_back(std::move(c));
  return commands;
}

// `entrypoints[0].id` of `answer`; null when a step is missing.
json fieldAt(const json& answer, const std::string& path) {
  const json* at = &answer;
  for (const std::string& step : allMatches(path, R"([^.\[\]]+|\[\d+\])")) {
    if (step.front() == '[') {
      const size_t index = std::stoul(step.substr(1));
      if (!at->is_array() || index >= at->size()) return nullptr;
      at = &(*at)[index];
    } else {
      if (!at->is_object() || !at->contains(step)) return nullptr;
      at = &(*at)[step];
    }
  }
  return *at;
}

// A command run by bash in the background (the README's receiver), its
// output going to a file; stopped with SIGTERM.
class BackgroundCommand {
 public:
  BackgroundCommand(const std::string& command, const std::filesystem::path& logFile)
      : log_(logFile) {
    Fd out(::open(logFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    REQUIRE(out.get() >= 0);
    pid_ = spawnChild({"bash", "-c", command}, {}, out.get(), out.get());
  }
  ~BackgroundCommand() {
    ::kill(pid_, SIGTERM);
    if (!waitFor(pid_, 10s)) {
      ::kill(pid_, SIGKILL);
      waitFor(pid_, 10s);
    }
  }
  BackgroundCommand(const BackgroundCommand&) = delete;
  BackgroundCommand& operator=(const BackgroundCommand&) = delete;

  std::string output() const {
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::filesystem::path log_;
  pid_t pid_;
};

// What the walk carries from one command to the next.
class Walk {
 public:
  explicit Walk(const std::filesystem::path& folder) : folder_(folder) {
    std::filesystem::create_directory(folder / "data");
    // The CLI is where `make run` built it, which the README puts on PATH
    // itself: the walk's PATH holds no webhooker of ours.
    substitutions_.push_back(
        {"$PWD/build/app", std::filesystem::path(webhookerBin()).parent_path().string()});
  }

  void step(const DocCommand& doc) {
    CAPTURE(doc.where);
    CAPTURE(doc.command);
    std::string command = doc.command;
    for (const auto& [from, to] : substitutions_) replaceAll(command, from, to);
    ++steps_;
    if (command.starts_with("# the receiver gets ")) return expectReceived(command.substr(20));
    if (command.starts_with("#")) return;
    if (command.starts_with("python3 ")) return startReceiver(command);
    if (command.starts_with("make run")) return startDaemon(command);
    if (const auto filled = allMatches(command, R"((\w+)=<([^>]+)>)"); !filled.empty())
      return fillFromAnswer(command);
    if (firstMatch(command, R"(^(export )?[A-Z_]+=)")) {
      prelude_ += command + "\n";
      return;
    }
    run(command);
  }

  void finish() const {
    CHECK_MESSAGE(receiver_, "no walk-through block starts the receiver");
    CHECK_MESSAGE(daemon_, "no walk-through block starts the daemon (make run)");
    // The receiver, the walk-through and the three routing examples hold
    // about thirty; far fewer means the extraction broke.
    CHECK(steps_ >= 25);
  }

 private:
  void startReceiver(const std::string& command) {
    const auto port = allMatches(command, R"(\("127\.0\.0\.1", (\d+)\))", 1);
    REQUIRE_MESSAGE(port.size() == 1, "the receiver listens on no 127.0.0.1 port");
    const std::string freePort = std::to_string(unusedLoopbackPort());
    substitutions_.push_back({"127.0.0.1:" + port[0], "127.0.0.1:" + freePort});
    std::string ours = command;
    replaceAll(ours, "\"127.0.0.1\", " + port[0], "\"127.0.0.1\", " + freePort);
    receiver_.emplace("cd '" + folder_.string() + "' && exec " + ours, folder_ / "receiver.log");
    httplib::Client probe("127.0.0.1", std::stoi(freePort));
    REQUIRE_MESSAGE(eventually([&] { return static_cast<bool>(probe.Get("/")); }, 20s),
                    "the receiver did not start:\n" << receiver_->output());
  }

  void startDaemon(const std::string& command) {
    std::vector<std::string> args;
    if (const auto flags = allMatches(command, R"(ARGS="([^"]*)\")", 1); !flags.empty()) {
      std::istringstream words(flags[0]);
      for (std::string word; words >> word;) args.push_back(word);
    }
    daemon_.emplace(folder_ / "data",
                    DaemonOptions{.args = args, .env = {DaemonApi::adminTokenEnv()}});
    substitutions_.push_back({"http://127.0.0.1:8080", daemon_->url()});
    substitutions_.push_back({"whk_...", DaemonApi::kAdminToken});
  }

  void fillFromAnswer(const std::string& command) {
    const json answer = json::parse(lastAnswer_, nullptr, false);
    const auto names = allMatches(command, R"((\w+)=<[^>]+>)", 1);
    const auto paths = allMatches(command, R"(\w+=<([^>]+)>)", 1);
    for (size_t i = 0; i < names.size(); ++i) {
      const json value = fieldAt(answer, paths[i]);
      REQUIRE_MESSAGE(value.is_string(), paths[i] << " is not in the previous answer: " << lastAnswer_);
      prelude_ += names[i] + "='" + value.get<std::string>() + "'\n";
    }
  }

  void run(const std::string& command) {
    REQUIRE_MESSAGE(daemon_, "a command before the daemon started");
    const char* path = std::getenv("PATH");
    const CommandResult r = runCommand(
        {"bash", "-c", "cd '" + folder_.string() + "'\n" + prelude_ + command},
        {std::string("PATH=") + (path ? path : "/usr/bin:/bin"), "WEBHOOKER_URL=" + daemon_->url()},
        60s);
    CHECK(r.exitCode == 0);
    CHECK(r.err == "");
    lastAnswer_ = r.out;
    const json answer = json::parse(r.out, nullptr, false);
    CHECK_MESSAGE(!(answer.is_object() && answer.contains("error")), r.out);
    // `# {"deliveries":1,...}`: the fields the answer must have.
    if (const auto said = firstMatch(command, R"(# \{[^}]*\})")) {
      std::string fields = said->substr(2);
      replaceAll(fields, ",...}", "}");
      const json expected = json::parse(fields, nullptr, false);
      REQUIRE_MESSAGE(expected.is_object(), "cannot read the expected answer " << *said);
      for (const auto& [key, value] : expected.items()) {
        const auto& field = key;  // clang 14: a lambda cannot name a binding
        CAPTURE(field);
        CHECK(fieldAt(answer, key) == value);
      }
    }
  }

  void expectReceived(const std::string& body) {
    REQUIRE(receiver_);
    CHECK_MESSAGE(eventually([&] { return receiver_->output().find(body) != std::string::npos; }, 20s),
                  "the receiver printed:\n" << receiver_->output());
  }

  std::filesystem::path folder_;
  std::vector<std::pair<std::string, std::string>> substitutions_;
  std::string prelude_;
  std::string lastAnswer_;
  int steps_ = 0;
  // Declared last: stopped first, before the folder they write in goes.
  std::optional<BackgroundCommand> receiver_;
  std::optional<DaemonProcess> daemon_;
};

}  // namespace

TEST_CASE("the README's walk-through runs top to bottom, in order, as written") {
  TempDir dir;
  Walk walk(dir.path());
  for (const DocCommand& command : walkthrough()) walk.step(command);
  walk.finish();
}

}  // namespace webhooker::testing
