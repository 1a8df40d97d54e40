// The frames JqSandbox (jq_sandbox.h) and its worker processes
// (jq_worker.h) exchange over a socket pair. Both ends are this binary, so
// the layout is native-endian and versionless.
//
//   ready:   u8 1, once, when the worker has started and limited itself
//   request: u8 op, u32 program size, u32 input size, program, input
//   reply:   u8 outcome, u8 retiring, u32 count, count x (u32 size, bytes)
//
// A kRun reply carries at most two outputs (compact JSON text): the callers
// need to tell none, one and several apart, never more. A kError reply
// carries one text, jq's message.
#pragma once

#include <cstddef>
#include <cstdint>

namespace webhooker::jq {

enum class Op : uint8_t { kCompile = 1, kRun = 2 };
enum class Outcome : uint8_t { kOutputs = 0, kError = 1 };

inline constexpr uint32_t kMaxFrameText = 64u * 1024 * 1024;  // any one program, input or output
inline constexpr uint32_t kMaxOutputs = 2;
// Compiled programs a worker keeps; past it, it forgets them all.
inline constexpr size_t kMaxCompiled = 256;

// The hidden first argument that makes the binary a worker.
inline constexpr const char* kWorkerArgument = "--jq-worker";

}  // namespace webhooker::jq
