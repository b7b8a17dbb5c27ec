#include "graph/npz.h"

#include <array>
#include <fstream>
#include <sstream>

#include "graph/npy.h"

namespace graphi::graph {
namespace {

uint32_t u32(const std::string& b, size_t off) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[off])) |
         static_cast<uint32_t>(static_cast<unsigned char>(b[off + 1])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(b[off + 2])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(b[off + 3])) << 24;
}
uint16_t u16(const std::string& b, size_t off) {
  return static_cast<uint16_t>(static_cast<unsigned char>(b[off]) |
                               static_cast<unsigned char>(b[off + 1]) << 8);
}

}  // namespace

Result<std::vector<std::pair<std::string, Tensor>>> read_npz(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::io_error(path + ": cannot open");
  std::ostringstream ss;
  ss << f.rdbuf();
  const std::string b = ss.str();
  auto bad = [&](const std::string& why) {
    return Status::invalid_argument(path + ": not a readable .npz (" + why + ")");
  };
  // End of central directory: 22 bytes + a comment of up to 64 KiB at the end.
  if (b.size() < 22) return bad("too short for a ZIP archive");
  size_t eocd = std::string::npos;
  for (size_t i = b.size() - 22 + 1; i-- > 0 && b.size() - i <= 22 + 65535;)
    if (u32(b, i) == 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd == std::string::npos) return bad("no ZIP end-of-central-directory record");
  const uint16_t count = u16(b, eocd + 10);
  size_t p = u32(b, eocd + 16);
  std::vector<std::pair<std::string, Tensor>> out;
  for (uint16_t k = 0; k < count; ++k) {
    if (p + 46 > b.size() || u32(b, p) != 0x02014b50) return bad("broken central directory");
    const uint16_t method = u16(b, p + 10);
    const uint32_t csize = u32(b, p + 20), usize = u32(b, p + 24);
    const uint16_t nlen = u16(b, p + 28), xlen = u16(b, p + 30), clen = u16(b, p + 32);
    const uint32_t local = u32(b, p + 42);
    if (p + 46 + nlen > b.size()) return bad("broken central directory");
    std::string name = b.substr(p + 46, nlen);
    p += 46 + nlen + xlen + clen;
    if (method != 0)
      return Status::invalid_argument(
          path + ": member '" + name +
          "' is compressed; write the archive with np.savez, not np.savez_compressed");
    if (csize == 0xFFFFFFFFu || usize == 0xFFFFFFFFu)
      return bad("member '" + name + "' needs ZIP64 (> 4 GiB)");
    if (static_cast<size_t>(local) + 30 > b.size() || u32(b, local) != 0x04034b50)
      return bad("broken local header of '" + name + "'");
    const size_t data = static_cast<size_t>(local) + 30 + u16(b, local + 26) + u16(b, local + 28);
    if (data + csize > b.size()) return bad("member '" + name + "' runs past the end of the file");
    GRAPHI_ASSIGN_OR_RETURN(Tensor t,
                            parse_npy(std::string_view(b).substr(data, csize), path + ":" + name));
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
      name.resize(name.size() - 4);
    out.emplace_back(std::move(name), std::move(t));
  }
  return out;
}

namespace {

uint32_t crc32(std::string_view bytes) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  uint32_t c = 0xffffffffu;
  for (unsigned char ch : bytes) c = table[(c ^ ch) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

void put16(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>((v >> 8) & 0xff));
}
void put32(std::string& out, uint32_t v) {
  put16(out, v & 0xffff);
  put16(out, v >> 16);
}

}  // namespace

Status write_npz(const std::string& path,
                 const std::vector<std::pair<std::string, Tensor>>& members) {
  std::string zip, central;
  for (const auto& [name, tensor] : members) {
    const std::string file = name + ".npy", data = serialize_npy(tensor);
    if (zip.size() + data.size() > 0xffffffffu)
      return Status::invalid_argument(path + ": archive over 4 GiB (ZIP64 is not written)");
    const uint32_t crc = crc32(data), size = static_cast<uint32_t>(data.size());
    const uint32_t offset = static_cast<uint32_t>(zip.size());
    // Local header: signature, version 2.0, flags 0, method 0 (stored), time/date 0.
    put32(zip, 0x04034b50);
    put16(zip, 20);
    put16(zip, 0);
    put16(zip, 0);
    put32(zip, 0);
    put32(zip, crc);
    put32(zip, size);
    put32(zip, size);
    put16(zip, static_cast<uint32_t>(file.size()));
    put16(zip, 0);
    zip += file;
    zip += data;
    put32(central, 0x02014b50);
    put16(central, 20);
    put16(central, 20);
    put16(central, 0);
    put16(central, 0);
    put32(central, 0);
    put32(central, crc);
    put32(central, size);
    put32(central, size);
    put16(central, static_cast<uint32_t>(file.size()));
    put32(central, 0);  // extra length, comment length
    put32(central, 0);  // disk number, internal attributes
    put32(central, 0);  // external attributes
    put32(central, offset);
    central += file;
  }
  const uint32_t central_offset = static_cast<uint32_t>(zip.size());
  zip += central;
  put32(zip, 0x06054b50);
  put32(zip, 0);
  put16(zip, static_cast<uint32_t>(members.size()));
  put16(zip, static_cast<uint32_t>(members.size()));
  put32(zip, static_cast<uint32_t>(central.size()));
  put32(zip, central_offset);
  put16(zip, 0);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Status::io_error(path + ": cannot open for writing");
  f.write(zip.data(), static_cast<std::streamsize>(zip.size()));
  if (!f) return Status::io_error(path + ": write failed");
  return Status::ok();
}

}  // namespace graphi::graph
