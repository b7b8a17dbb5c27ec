#include "graph/npz.h"

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

}  // namespace graphi::graph
