#pragma once
// The exception types every s3d library throws. The CLI frame catches them in one place and maps each
// type to an exit code (docs/CLI.md): InvalidArgument -> 2, IoError/DataError -> 1 for the item,
// DeviceUnavailable/OutOfMemory/CudaError -> 75 (transient: retry elsewhere).
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace s3d {

/// Base of every s3d exception; what() is one line meant for a user.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A parameter or argument is out of its documented range (a caller's mistake, not the data's).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// A file is missing, unreadable, unwritable, or not in the format it claims.
class IoError : public Error {
 public:
  using Error::Error;
};

/// IoError "`path`: `what`: REASON", REASON being errno's text: for a failed write, open or close, so that a
/// full disk or a missing permission says so. errno is read now; a stream that failed without setting it
/// gives "an I/O error".
inline IoError io_error_with_reason(const std::string& path, const std::string& what) {
  const int err = errno;
  return IoError(path + ": " + what + ": " + (err != 0 ? std::strerror(err) : "an I/O error"));
}

/// A file parses but its content cannot be used (NaN scores, images of different sizes, ...).
class DataError : public Error {
 public:
  using Error::Error;
};

/// A CUDA runtime call or kernel launch failed; the message carries file:line and CUDA's own text.
class CudaError : public Error {
 public:
  using Error::Error;
};

/// A CUDA device was asked for strictly (`--device cuda`) but none is visible, or CUDA is not built.
class DeviceUnavailable : public Error {
 public:
  using Error::Error;
};

/// A device (or host) allocation failed. Transient for a batch tool: another machine may have room.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

}  // namespace s3d

/// Throws s3d::InvalidArgument with `message` when `condition` does not hold.
#define S3D_EXPECTS(condition, message)                      \
  do {                                                       \
    if (!(condition)) throw ::s3d::InvalidArgument(message); \
  } while (0)
