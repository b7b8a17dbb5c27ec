// Bottom of the stack: Status, Result<T>, error macros and dtypes. Every folder may include it;
// it includes nothing of graphi.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "graphi/types.h"

namespace graphi {

// An error value: a code plus a message that says what, where and why. OK costs one null
// pointer (ONNX Runtime's shape), so returning Status on every compile-time path is cheap.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : state_(code == StatusCode::kOk ? nullptr
                                       : std::make_shared<State>(State{code, std::move(message)})) {
  }

  static Status ok() { return Status(); }
  static Status invalid_argument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status invalid_graph(std::string m) { return {StatusCode::kInvalidGraph, std::move(m)}; }
  static Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool is_ok() const { return state_ == nullptr; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  const std::string& message() const {
    static const std::string kEmpty;
    return state_ ? state_->message : kEmpty;
  }
  // The same error with `prefix: ` in front, e.g. the file name added by a loader.
  Status with_context(std::string_view prefix) const {
    if (is_ok()) return *this;
    return Status(code(), std::string(prefix) + ": " + message());
  }
  std::string to_string() const;

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const State> state_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).is_ok()) v_ = Status::internal("Result built from an OK Status");
  }
  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

// Thrown only at API boundaries (C++ API, CLI) that turn a Status into an exception.
class Error : public std::exception {
 public:
  explicit Error(Status s) : status_(std::move(s)), what_(status_.to_string()) {}
  const char* what() const noexcept override { return what_.c_str(); }
  const Status& status() const { return status_; }
  StatusCode code() const { return status_.code(); }

 private:
  Status status_;
  std::string what_;
};

// Value of a Result or throw Error: for front ends and tests.
template <typename T>
T value_or_throw(Result<T> r) {
  if (!r.is_ok()) throw Error(r.status());
  return std::move(r).value();
}
inline void throw_if_error(const Status& s) {
  if (!s.is_ok()) throw Error(s);
}

// Invariant violated (a bug, never user input): print file:line and abort, also in Release.
[[noreturn]] void check_failed(const char* file, int line, const char* cond,
                               const std::string& msg);

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "float32", "int32", "int64" (numpy names)
std::optional<DType> dtype_from_name(std::string_view name);  // accepts "float32"/"f32" etc.

}  // namespace graphi

#define GRAPHI_CONCAT_INNER(a, b) a##b
#define GRAPHI_CONCAT(a, b) GRAPHI_CONCAT_INNER(a, b)

#define GRAPHI_RETURN_IF_ERROR(expr)            \
  do {                                          \
    ::graphi::Status _graphi_st = (expr);       \
    if (!_graphi_st.is_ok()) return _graphi_st; \
  } while (0)

// GRAPHI_ASSIGN_OR_RETURN(auto x, make_x()); returns the Status on failure.
#define GRAPHI_ASSIGN_OR_RETURN(lhs, expr)              \
  auto GRAPHI_CONCAT(_graphi_r, __LINE__) = (expr);     \
  if (!GRAPHI_CONCAT(_graphi_r, __LINE__).is_ok())      \
    return GRAPHI_CONCAT(_graphi_r, __LINE__).status(); \
  lhs = std::move(GRAPHI_CONCAT(_graphi_r, __LINE__)).value()

#define GRAPHI_CHECK(cond, msg)                                            \
  do {                                                                     \
    if (!(cond)) ::graphi::check_failed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)
