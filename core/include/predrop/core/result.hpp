#pragma once
// Errors as values at parsing and validation boundaries (STYLE.md "Errors"). A small stand-in for
// std::expected, which libstdc++ 12 only offers under C++23.
#include <string>
#include <utility>
#include <variant>

namespace predrop::core {

/// Why an operation failed, as text meant for a log line or an error message.
struct Error {
  std::string message;
};

/// Either a value or an Error. Check ok() before value(); value() on an error is a logic bug.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

/// Result of an operation that yields nothing but may fail.
struct Ok {};
using Status = Result<Ok>;

inline Error make_error(std::string message) {
  return Error{std::move(message)};
}

}  // namespace predrop::core
