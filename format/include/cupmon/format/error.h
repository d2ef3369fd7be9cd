// Value-or-error for fallible I/O, configuration and decoding across cupmon.
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace cupmon {

// An environment or input error a user can act on: the message names the file, offset and what was
// expected. Bugs are not Errors; they are caught by CUPMON_CHECK.
struct Error {
  std::string message;
  int sys_errno = 0;  // errno when the error came from the OS, else 0
};

template <typename T>
using Expected = std::expected<T, Error>;

inline std::unexpected<Error> MakeError(std::string message, int sys_errno = 0) {
  return std::unexpected<Error>(Error{std::move(message), sys_errno});
}

}  // namespace cupmon
