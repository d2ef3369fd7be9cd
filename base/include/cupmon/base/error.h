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
// checks first, as everywhere in cupmon), error, and Expected<void>.
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

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected()
    requires std::is_default_constructible_v<T>
      : has_(true) {
    ::new (&value_) T();
  }
  template <typename U = T>
    requires(std::is_constructible_v<T, U &&> &&
             !std::is_same_v<std::remove_cvref_t<U>, Expected>)
  Expected(U&& v) : has_(true) {  // NOLINT(google-explicit-constructor): as std::expected
    ::new (&value_) T(std::forward<U>(v));
  }
  template <typename G>
  Expected(const unexpected<G>& e) : has_(false) {  // NOLINT(google-explicit-constructor)
    ::new (&error_) Error(e.error());
  }
  template <typename G>
  Expected(unexpected<G>&& e) : has_(false) {  // NOLINT(google-explicit-constructor)
    ::new (&error_) Error(std::move(e).error());
  }
  Expected(const Expected& o) : has_(o.has_) {
    if (has_) ::new (&value_) T(o.value_);
    else ::new (&error_) Error(o.error_);
  }
  Expected(Expected&& o) noexcept(std::is_nothrow_move_constructible_v<T>) : has_(o.has_) {
    if (has_) ::new (&value_) T(std::move(o.value_));
    else ::new (&error_) Error(std::move(o.error_));
  }
  Expected& operator=(const Expected& o) {
    if (this != &o) {
      Destroy();
      has_ = o.has_;
      if (has_) ::new (&value_) T(o.value_);
      else ::new (&error_) Error(o.error_);
    }
    return *this;
  }
  Expected& operator=(Expected&& o) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &o) {
      Destroy();
      has_ = o.has_;
      if (has_) ::new (&value_) T(std::move(o.value_));
      else ::new (&error_) Error(std::move(o.error_));
    }
    return *this;
  }
  ~Expected() { Destroy(); }

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
  const Error& error() const& { return error_; }
  Error& error() & { return error_; }
  Error&& error() && { return std::move(error_); }

 private:
  void Destroy() {
    if (has_) value_.~T();
    else error_.~Error();
  }
  bool has_;
  union {
    T value_;
    Error error_;
  };
};

template <>
class [[nodiscard]] Expected<void> {
 public:
  Expected() = default;
  template <typename G>
  Expected(const unexpected<G>& e) : has_(false), error_(e.error()) {}  // NOLINT
  template <typename G>
  Expected(unexpected<G>&& e) : has_(false), error_(std::move(e).error()) {}  // NOLINT

  bool has_value() const noexcept { return has_; }
  explicit operator bool() const noexcept { return has_; }
  void operator*() const noexcept {}
  void value() const noexcept {}
  const Error& error() const& { return error_; }
  Error& error() & { return error_; }
  Error&& error() && { return std::move(error_); }

 private:
  bool has_ = true;
  Error error_;
};

#endif  // __cpp_lib_expected

inline unexpected<Error> MakeError(std::string message, int sys_errno = 0) {
  return unexpected<Error>(Error{std::move(message), sys_errno});
}

}  // namespace cupmon

#if !defined(__cpp_lib_expected)
// Code written against std::expected spells `std::unexpected(e)`. With no std::unexpected in this
// standard library, that name refers to the fallback above. Adding a name to std is outside what
// the standard allows, so this is confined to the one configuration that has no std::unexpected
// (the clang-14 fuzz build); new code should write cupmon::unexpected, which works everywhere.
namespace std {  // NOLINT(cert-dcl58-cpp)
using ::cupmon::unexpected;
}  // namespace std
#endif
