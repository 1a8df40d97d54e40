// libjq in this process, on one thread, with no isolation: the least a jq
// program's runs can cost, the baseline for what routing adds around them.
#pragma once

#include <string>
#include <vector>

namespace webhooker::bench {

// CPU seconds of this thread per run of `program` over each of `inputs` in
// turn (`runs` in all): parse the input, run, write each output as text, as
// a jq worker does. Throws std::runtime_error if the program does not
// compile or an input does not parse.
double bareJqSecondsPerRun(const std::string& program, const std::vector<std::string>& inputs,
                           size_t runs);

}  // namespace webhooker::bench
