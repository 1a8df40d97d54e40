#include "routing/jq_worker.h"

extern "C" {
#include <jq.h>
}
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "routing/jq_protocol.h"

namespace webhooker {

namespace {

// GCC names ASan and TSan builds with macros, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizer = true;
#else
constexpr bool kSanitizer = false;
#endif
#else
constexpr bool kSanitizer = false;
#endif

constexpr int kChannel = 0;

bool readAll(void* data, size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::read(kChannel, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool writeAll(const void* data, size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(kChannel, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool readText(uint32_t size, std::string& out) {
  if (size > jq::kMaxFrameText) return false;
  out.resize(size);
  return readAll(out.data(), size);
}

std::string textOf(jv value) {
  if (jv_get_kind(value) == JV_KIND_STRING) {
    std::string s(jv_string_value(value), static_cast<size_t>(jv_string_length_bytes(jv_copy(value))));
    jv_free(value);
    return s;
  }
  jv dumped = jv_dump_string(value, 0);
  std::string s(jv_string_value(dumped));
  jv_free(dumped);
  return s;
}

// jq reports compile errors through this callback, one message each.
void collectError(void* data, jv message) {
  auto* messages = static_cast<std::string*>(data);
  if (!messages->empty()) *messages += "; ";
  *messages += textOf(message);
}

// Defined before every program, on its first line (jq's line numbers stay
// the program's own). Shadowing the builtins gives a program that asks for
// more input than its one event, or writes to the daemon's stderr, an answer
// of its own instead of a worker crash. And since `module`, `import` and
// `include` may only open a program, the prelude makes each a syntax error:
// a program reads no file, whatever its module metadata or path says.
constexpr std::string_view kPrelude =
    "def input: error(\"input: a program sees one event, there is no other input\"); "
    "def inputs: empty; def debug: .; def stderr: .; def input_filename: null; "
    "def modulemeta: error(\"modulemeta: jq programs read no file\"); ";

// jq's message with the prelude taken out, and a refused module directive
// said plainly.
std::string compileMessage(std::string message) {
  for (size_t at; (at = message.find(kPrelude)) != std::string::npos;)
    message.erase(at, kPrelude.size());
  for (const char* directive : {"unexpected import", "unexpected include", "unexpected module"})
    if (message.find(directive) != std::string::npos)
      return "module, import and include are refused: jq programs read no file";
  return message;
}

class Programs {
 public:
  ~Programs() { clear(); }

  // The compiled program, or nullptr with jq's message in `error`.
  jq_state* get(const std::string& text, std::string& error) {
    if (auto it = compiled_.find(text); it != compiled_.end()) return it->second;
    if (compiled_.size() >= jq::kMaxCompiled) clear();
    jq_state* state = jq_init();
    if (!state) {
      error = "jq could not start";
      return nullptr;
    }
    std::string messages;
    jq_set_error_cb(state, collectError, &messages);
    // No module search path either (defence in depth; see kPrelude).
    jq_set_attr(state, jv_string("JQ_LIBRARY_PATH"), jv_array());
    const std::string source = std::string(kPrelude) + text;
    const bool ok = jq_compile(state, source.c_str()) != 0;
    jq_set_error_cb(state, nullptr, nullptr);
    if (!ok || text.find('\0') != std::string::npos) {
      jq_teardown(&state);
      error = messages.empty() ? "the program does not compile" : compileMessage(messages);
      return nullptr;
    }
    compiled_.emplace(text, state);
    return state;
  }

 private:
  void clear() {
    for (auto& [text, state] : compiled_) jq_teardown(&state);
    compiled_.clear();
  }
  std::unordered_map<std::string, jq_state*> compiled_;
};

struct Reply {
  jq::Outcome outcome = jq::Outcome::kOutputs;
  std::vector<std::string> texts;
};

Reply errorReply(std::string message) { return {jq::Outcome::kError, {std::move(message)}}; }

Reply run(jq_state* state, const std::string& input) {
  jv value = jv_parse_sized(input.data(), static_cast<int>(input.size()));
  if (!jv_is_valid(value)) {
    jv_free(value);
    return errorReply("the input is not JSON");
  }
  std::string runtimeError;
  jq_set_error_cb(state, collectError, &runtimeError);
  jq_start(state, value, 0);
  Reply reply;
  while (reply.texts.size() < jq::kMaxOutputs) {
    jv out = jq_next(state);
    if (jv_is_valid(out)) {
      reply.texts.push_back(textOf(jv_dump_string(out, 0)));
      continue;
    }
    if (jv_invalid_has_msg(jv_copy(out))) {
      jv message = jv_invalid_get_msg(out);
      const bool isString = jv_get_kind(message) == JV_KIND_STRING;
      std::string text = textOf(message);
      jq_set_error_cb(state, nullptr, nullptr);
      return errorReply(isString ? text : text + " (not a string)");
    }
    jv_free(out);
    break;
  }
  jq_set_error_cb(state, nullptr, nullptr);
  if (!runtimeError.empty()) return errorReply(runtimeError);
  if (jq_halted(state)) {
    // `halt` ends the outputs; `halt_error` fails the run with its message.
    jv message = jq_get_error_message(state);
    if (jv_get_kind(message) != JV_KIND_NULL && jv_is_valid(message))
      return errorReply("halt_error: " + textOf(message));
    jv_free(message);
  }
  return reply;
}

void limitSelf(rlim_t memoryBytes, rlim_t cpuSeconds) {
  // Under a sanitizer the shadow memory alone exceeds any address-space
  // limit; the time budget still bounds the program there.
  if (!kSanitizer && memoryBytes > 0) {
    const rlimit memory{memoryBytes, memoryBytes};
    ::setrlimit(RLIMIT_AS, &memory);
  }
  const rlimit cpu{cpuSeconds, cpuSeconds + 1};
  ::setrlimit(RLIMIT_CPU, &cpu);
  const rlimit none{0, 0};
  ::setrlimit(RLIMIT_FSIZE, &none);
  ::setrlimit(RLIMIT_CORE, &none);
}

double cpuSecondsUsed() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

int serve(rlim_t memoryBytes, rlim_t cpuSeconds) {
  limitSelf(memoryBytes, cpuSeconds);
  const uint8_t ready = 1;
  if (!writeAll(&ready, 1)) return 0;
  Programs programs;
  std::string program, input;
  while (true) {
    uint8_t op = 0;
    uint32_t sizes[2] = {0, 0};
    if (!readAll(&op, 1) || !readAll(sizes, sizeof sizes)) return 0;  // the parent is gone
    if (!readText(sizes[0], program) || !readText(sizes[1], input)) return 1;
    Reply reply;
    std::string error;
    jq_state* state = programs.get(program, error);
    if (!state) reply = errorReply(std::move(error));
    else if (op == static_cast<uint8_t>(jq::Op::kRun)) reply = run(state, input);

    // Only after a run: a compile is always followed by its run.
    const uint8_t retiring = op == static_cast<uint8_t>(jq::Op::kRun) &&
                                     cpuSecondsUsed() > static_cast<double>(cpuSeconds) / 2
                                 ? 1
                                 : 0;
    std::string frame;
    frame.push_back(static_cast<char>(reply.outcome));
    frame.push_back(static_cast<char>(retiring));
    const auto appendSize = [&frame](uint32_t n) {
      frame.append(reinterpret_cast<const char*>(&n), sizeof n);
    };
    appendSize(static_cast<uint32_t>(reply.texts.size()));
    for (const std::string& text : reply.texts) {
      if (text.size() > jq::kMaxFrameText) return 1;  // the parent sees the worker gone
      appendSize(static_cast<uint32_t>(text.size()));
      frame += text;
    }
    if (!writeAll(frame.data(), frame.size())) return 0;
    if (retiring) return 0;
  }
}

}  // namespace

std::optional<int> runJqWorkerIfAsked(int argc, char** argv) {
  if (argc != 4 || std::strcmp(argv[1], jq::kWorkerArgument) != 0) return std::nullopt;
  const auto memory = static_cast<rlim_t>(std::strtoull(argv[2], nullptr, 10));
  const auto cpu = static_cast<rlim_t>(std::strtoull(argv[3], nullptr, 10));
  return serve(memory, cpu > 0 ? cpu : 1);
}

}  // namespace webhooker
