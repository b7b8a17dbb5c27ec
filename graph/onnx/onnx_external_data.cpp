#include "graph/onnx/onnx_external_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "graph/memory_budget.h"

namespace graphi::graph::onnx {

namespace {

// A decimal external_data value: digits only, below 2^62.
Result<uint64_t> parse_decimal(const std::string& s, const std::string& what, const char* field) {
  auto bad = [&] {
    return Status::invalid_graph(what + ": external_data field '" + field + "' is '" + s +
                                 "', expected a non-negative decimal number of bytes");
  };
  if (s.empty() || s.size() > 19) return bad();
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return bad();
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > (uint64_t{1} << 62)) return bad();
  return v;
}

// Closes a file descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

ExternalDataReader::ExternalDataReader(const std::string& model_dir, uint64_t max_memory)
    : max_memory_(max_memory) {
  std::error_code ec;
  dir_ = std::filesystem::canonical(model_dir.empty() ? "." : model_dir, ec);
  if (ec) {
    dir_error_ = "cannot resolve the model's directory '" + model_dir + "': " + ec.message();
    dir_.clear();
  }
}

Result<std::filesystem::path> ExternalDataReader::resolve(const ExternalDataRef& ref,
                                                          const std::string& what) const {
  const std::string loc = "external_data field 'location' ('" + ref.location + "')";
  if (ref.location.empty())
    return Status::invalid_graph(what +
                                 ": the tensor's data is external (data_location = "
                                 "EXTERNAL) but external_data has no 'location'");
  if (ref.location.find('\0') != std::string::npos)
    return Status::invalid_graph(what + ": " + loc + " contains a NUL byte");
  const std::filesystem::path rel(ref.location);
  if (rel.is_absolute() || ref.location[0] == '/')
    return Status::invalid_graph(what + ": " + loc +
                                 " is an absolute path; external data must be a file in the "
                                 "model's directory, named relative to it");
  for (const auto& part : rel)
    if (part == "..")
      return Status::invalid_graph(what + ": " + loc +
                                   " contains '..'; external data must stay inside the model's "
                                   "directory");
  if (dir_.empty()) return Status::io_error(what + ": " + loc + ": " + dir_error_);
  const std::filesystem::path joined = dir_ / rel;
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(joined, ec);
  if (ec)
    return Status::io_error(what + ": " + loc + ": cannot open the side file '" + joined.string() +
                            "': " + ec.message());
  // Symlinks are resolved above: the real file must still be inside the model's directory.
  const std::filesystem::path inside = real.lexically_relative(dir_);
  if (inside.empty() || *inside.begin() == "..")
    return Status::invalid_graph(what + ": " + loc + " resolves to '" + real.string() +
                                 "' (through a symbolic link), outside the model's directory '" +
                                 dir_.string() + "'");
  if (!std::filesystem::is_regular_file(real, ec))
    return Status::invalid_graph(what + ": " + loc + ": '" + real.string() +
                                 "' is not a regular file");
  return real;
}

Result<std::vector<std::byte>> ExternalDataReader::read(const ExternalDataRef& ref,
                                                        const std::string& what,
                                                        uint64_t expected) {
  GRAPHI_ASSIGN_OR_RETURN(std::filesystem::path real, resolve(ref, what));
  const std::string file = "side file '" + real.string() + "'";
  uint64_t offset = 0;
  if (ref.has_offset) {
    GRAPHI_ASSIGN_OR_RETURN(offset, parse_decimal(ref.offset, what, "offset"));
  }
  Fd fd;
  // O_NOFOLLOW: the path was resolved; a symlink swapped in since then is refused.
  fd.fd = ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd.fd < 0)
    return Status::io_error(what + ": cannot open " + file + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode))
    return Status::io_error(what + ": " + file + " is not a readable regular file");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (offset > size)
    return Status::invalid_graph(what + ": external_data field 'offset' (" +
                                 std::to_string(offset) + ") is past the end of " + file + " (" +
                                 std::to_string(size) + " bytes)");
  uint64_t length = size - offset;
  if (ref.has_length) {
    GRAPHI_ASSIGN_OR_RETURN(length, parse_decimal(ref.length, what, "length"));
    if (length > size - offset)
      return Status::invalid_graph(what + ": external_data field 'length' (" +
                                   std::to_string(length) + ") at offset " +
                                   std::to_string(offset) + " runs past the end of " + file + " (" +
                                   std::to_string(size) + " bytes)");
  }
  if (length != expected)
    return Status::invalid_graph(
        what + ": external_data field '" + std::string(ref.has_length ? "length" : "location") +
        "' gives " + std::to_string(length) + " bytes" +
        (ref.has_length ? "" : " (the rest of " + file + ")") +
        ", but the tensor's dims and data_type need " + std::to_string(expected));
  GRAPHI_RETURN_IF_ERROR(check_memory(max_memory_ ? total_ + length : length, max_memory_,
                                      what + ": external data from " + file));
  std::vector<std::byte> bytes(static_cast<size_t>(length));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pread(fd.fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return Status::io_error(what + ": read error in " + file + " at byte " +
                              std::to_string(offset + done) +
                              (n < 0 ? std::string(": ") + std::strerror(errno) : ": file shrank"));
    done += static_cast<size_t>(n);
  }
  total_ += length;
  return bytes;
}

}  // namespace graphi::graph::onnx
