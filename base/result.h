// Result<T>: the value of an operation that can fail in an expected way
// (bad input, a busy database, a refused destination). Exceptions are kept
// for start-up failures and bugs; everything a caller should handle comes
// back as an Error with a stable machine code and a human message.
//
// Every code is named in base/error_codes.h; the ones callers branch on are
// tested through Error's predicates below, not by comparing strings.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "base/error_codes.h"

namespace webhooker {

struct Error {
  std::string code;     // stable, snake_case: "not_found", "invalid_json", ...
  std::string message;  // for humans; never carries a secret

  bool isNotFound() const { return code == error_code::kNotFound; }
  bool isConflict() const { return code == error_code::kConflict; }
  bool isBlockedDestination() const { return code == error_code::kBlockedDestination; }
  // Storage that may work again without a change of input: busy, read-only
  // or out of space.
  bool isStorageUnavailable() const {
    return code == error_code::kStorageBusy || code == error_code::kStorageReadonly ||
           code == error_code::kStorageUnavailable;
  }
  // A failure of the daemon, not of the request.
  bool isInternal() const {
    return code == error_code::kStorageError || code == error_code::kSchemaTooNew;
  }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : state_(std::move(error)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<T>(state_); }
  const T& value() const& { assert(ok()); return std::get<T>(state_); }
  T&& value() && { assert(ok()); return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { assert(!ok()); return std::get<Error>(state_); }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { assert(!ok_); return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

inline Error makeError(std::string_view code, std::string message) {
  return Error{std::string(code), std::move(message)};
}

}  // namespace webhooker
