// Value-or-error for fallible I/O, configuration and decoding across cupmon.
#pragma once

#if __has_include(<expected>)
#include <expected>
#endif
#include <new>
#include <string>
#include <type_traits>
#include <utility>

namespace cupmon {

// An environment or input error a user can act on: the message names the file, offset and what was
// expected. Bugs are not Errors; they are caught by CUPMON_CHECK.
struct Error {
  std::string message;
  int sys_errno = 0;  // errno when the error came from the OS, else 0
};

#if defined(__cpp_lib_expected)

template <typename T>
using Expected = std::expected<T, Error>;
using std::unexpected;

#else

// Fallback for standard libraries without std::expected under this compiler (clang 14 with
// libstdc++ 12: its <expected> needs C++20 conditionally trivial members clang 14 lacks). Only
// the members cupmon uses: has_value, operator bool, *, ->, value (no exceptions: the caller
// checks first, as everywhere in cupmon), value_or, error, and a void value; any error type, as
// std::expected (the control client's ClientError, a test's std::string).
template <typename E>
class unexpected {
 public:
  template <typename U = E>
    requires std::is_constructible_v<E, U&&>
  constexpr explicit unexpected(U&& e) : error_(std::forward<U>(e)) {}
  constexpr const E& error() const& noexcept { return error_; }
  constexpr E& error() & noexcept { return error_; }
  constexpr E&& error() && noexcept { return std::move(error_); }

 private:
  E error_;
};
template <typename E>
unexpected(E) -> unexpected<E>;

template <typename T, typename E>
class [[nodiscard]] BasicExpected {
 public:
  BasicExpected()
    requires std::is_default_constructible_v<T>
      : has_(true) {
    ::new (&value_) T();
  }
  template <typename U = T>
    requires(std::is_constructible_v<T, U &&> &&
             !std::is_same_v<std::remove_cvref_t<U>, BasicExpected>)
  BasicExpected(U&& v) : has_(true) {  // NOLINT(google-explicit-constructor): as std::expected
    ::new (&value_) T(std::forward<U>(v));
  }
  template <typename G>
  BasicExpected(const unexpected<G>& e) : has_(false) {  // NOLINT(google-explicit-constructor)
    ::new (&error_) E(e.error());
  }
  template <typename G>
  BasicExpected(unexpected<G>&& e) : has_(false) {  // NOLINT(google-explicit-constructor)
    ::new (&error_) E(std::move(e).error());
  }
  BasicExpected(const BasicExpected& o) : has_(o.has_) {
    if (has_) ::new (&value_) T(o.value_);
    else ::new (&error_) E(o.error_);
  }
  BasicExpected(BasicExpected&& o) noexcept(std::is_nothrow_move_constructible_v<T>)
      : has_(o.has_) {
    if (has_) ::new (&value_) T(std::move(o.value_));
    else ::new (&error_) E(std::move(o.error_));
  }
  BasicExpected& operator=(const BasicExpected& o) {
    if (this != &o) {
      Destroy();
      has_ = o.has_;
      if (has_) ::new (&value_) T(o.value_);
      else ::new (&error_) E(o.error_);
    }
    return *this;
  }
  BasicExpected& operator=(BasicExpected&& o) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &o) {
      Destroy();
      has_ = o.has_;
      if (has_) ::new (&value_) T(std::move(o.value_));
      else ::new (&error_) E(std::move(o.error_));
    }
    return *this;
  }
  ~BasicExpected() { Destroy(); }

  bool has_value() const noexcept { return has_; }
  explicit operator bool() const noexcept { return has_; }
  T& operator*() & { return value_; }
  const T& operator*() const& { return value_; }
  T&& operator*() && { return std::move(value_); }
  T* operator->() { return &value_; }
  const T* operator->() const { return &value_; }
  T& value() & { return value_; }
  const T& value() const& { return value_; }
  T&& value() && { return std::move(value_); }
  template <typename U>
  T value_or(U&& fallback) const& {
    return has_ ? value_ : static_cast<T>(std::forward<U>(fallback));
  }
  template <typename U>
  T value_or(U&& fallback) && {
    return has_ ? std::move(value_) : static_cast<T>(std::forward<U>(fallback));
  }
  const E& error() const& { return error_; }
  E& error() & { return error_; }
  E&& error() && { return std::move(error_); }

 private:
  void Destroy() {
    if (has_) value_.~T();
    else error_.~E();
  }
  bool has_;
  union {
    T value_;
    E error_;
  };
};

template <typename E>
class [[nodiscard]] BasicExpected<void, E> {
 public:
  BasicExpected() = default;
  template <typename G>
  BasicExpected(const unexpected<G>& e) : has_(false), error_(e.error()) {}  // NOLINT
  template <typename G>
  BasicExpected(unexpected<G>&& e) : has_(false), error_(std::move(e).error()) {}  // NOLINT

  bool has_value() const noexcept { return has_; }
  explicit operator bool() const noexcept { return has_; }
  void operator*() const noexcept {}
  void value() const noexcept {}
  const E& error() const& { return error_; }
  E& error() & { return error_; }
  E&& error() && { return std::move(error_); }

 private:
  bool has_ = true;
  E error_{};
};

template <typename T>
using Expected = BasicExpected<T, Error>;

#endif  // __cpp_lib_expected

inline unexpected<Error> MakeError(std::string message, int sys_errno = 0) {
  return unexpected<Error>(Error{std::move(message), sys_errno});
}

}  // namespace cupmon

#if !defined(__cpp_lib_expected)
// Code written against std::expected spells `std::expected<T, E>` and `std::unexpected(e)`. With
// neither in this standard library, those names refer to the fallback above. Adding names to std
// is outside what the standard allows, so this is confined to the one configuration that has no
// std::expected (clang 14 with libstdc++ 12: the fuzz build and the TSan suite); new code should
// write cupmon::Expected and cupmon::unexpected, which work everywhere.
namespace std {  // NOLINT(cert-dcl58-cpp)
using ::cupmon::unexpected;
template <typename T, typename E>
using expected = ::cupmon::BasicExpected<T, E>;
}  // namespace std
#endif
