#include "bench/bare_jq.h"

extern "C" {
#include <jq.h>
#include <jv.h>
}

#include <time.h>

#include <stdexcept>

namespace webhooker::bench {
namespace {

double threadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

}  // namespace

double bareJqSecondsPerRun(const std::string& program, const std::vector<std::string>& inputs,
                           size_t runs) {
  jq_state* jq = jq_init();
  if (!jq || !jq_compile(jq, program.c_str())) {
    if (jq) jq_teardown(&jq);
    throw std::runtime_error("jq does not compile " + program);
  }
  size_t outputs = 0;  // kept, so that no run can be optimised away
  const double start = threadCpuSeconds();
  for (size_t i = 0; i < runs; ++i) {
    const std::string& input = inputs[i % inputs.size()];
    jv value = jv_parse_sized(input.data(), static_cast<int>(input.size()));
    if (!jv_is_valid(value)) {
      jv_free(value);
      jq_teardown(&jq);
      throw std::runtime_error("jq cannot parse a bench input");
    }
    jq_start(jq, value, 0);
    while (true) {
      jv out = jq_next(jq);
      if (!jv_is_valid(out)) {
        jv_free(out);
        break;
      }
      jv text = jv_dump_string(out, 0);
      outputs += static_cast<size_t>(jv_string_length_bytes(jv_copy(text)));
      jv_free(text);
    }
  }
  const double seconds = threadCpuSeconds() - start;
  jq_teardown(&jq);
  if (outputs == 0) throw std::runtime_error("jq gave no output for " + program);
  return seconds / static_cast<double>(runs);
}

}  // namespace webhooker::bench
