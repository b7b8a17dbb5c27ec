// Throwaway comparison (issue 16): graphi's own protobuf reader (graph/onnx/protobuf_reader.h,
// graph/onnx/onnx_proto.h) against libprotobuf with the onnx-ml.proto classes, on one file.
//   graphi_bench_onnx_load MODE FILE [REPEATS]
// MODE: graphi   - graph::onnx::decode_model (parse to graphi's ONNX message structs)
//       protobuf - onnx::ModelProto::ParseFromArray (libprotobuf, generated classes)
//       import   - graph::import_onnx_file (graphi's whole import: decode, import, validation)
// Prints one JSON line: median milliseconds over REPEATS parses (the file read once, before),
// the process's resident set before and after the file was read and its peak (VmHWM) after
// the parses (compare.py also takes the child's getrusage ru_maxrss), and ok/error. benchmarks/onnx_load/compare.py runs it in a child process per load.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "graph/onnx/onnx_import.h"
#include "graph/onnx/onnx_proto.h"
#include "onnx-ml.pb.h"
#include "ops/registry.h"

namespace {

long status_kb(const char* key) {  // VmRSS (now) or VmHWM (peak) from /proc/self/status
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(6));
  return -1;
}
long rss_kb() { return status_kb("VmRSS:"); }
long max_rss_kb() { return status_kb("VmHWM:"); }

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    o += c;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s graphi|protobuf|import FILE [REPEATS]\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1], path = argv[2];
  const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 1;
  const long rss0 = rss_kb();
  std::vector<std::byte> bytes;
  if (mode != "import") {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) {
      std::printf("{\"mode\":\"%s\",\"ok\":false,\"error\":\"cannot open\"}\n", mode.c_str());
      return 1;
    }
    bytes.resize(static_cast<size_t>(f.tellg()));
    f.seekg(0);
    f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const long rss_file = rss_kb();
  std::vector<double> ms;
  bool ok = true;
  std::string error;
  size_t nodes = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (mode == "graphi") {
      auto m = graphi::graph::onnx::decode_model(bytes);
      ok = m.is_ok();
      if (ok) nodes = m->graph.nodes.size();
      else error = m.status().message();
    } else if (mode == "protobuf") {
      onnx::ModelProto m;
      ok = bytes.size() <= static_cast<size_t>(INT32_MAX) &&
           m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
      if (ok) nodes = static_cast<size_t>(m.graph().node_size());
      else error = "ParseFromArray failed";
    } else if (mode == "import") {
      auto g = graphi::graph::import_onnx_file(path, graphi::ops::Registry::get());
      ok = g.is_ok();
      if (ok) nodes = g->nodes().size();
      else error = g.status().message();
    } else {
      std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
      return 2;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf(
      "{\"mode\":\"%s\",\"ok\":%s,\"nodes\":%zu,\"bytes\":%zu,\"median_ms\":%.3f,\"min_ms\":%.3f,"
      "\"repeats\":%d,\"rss_start_kb\":%ld,\"rss_file_kb\":%ld,\"max_rss_kb\":%ld,"
      "\"error\":\"%s\"}\n",
      mode.c_str(), ok ? "true" : "false", nodes, bytes.size(), ms[ms.size() / 2], ms.front(),
      repeats, rss0, rss_file, max_rss_kb(), json_escape(error.substr(0, 200)).c_str());
  return ok ? 0 : 1;
}
