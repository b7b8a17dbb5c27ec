// LSTM, GRU and RNN sequence ops (ONNX semantics, see ops/rnn/rnn_sequence.h) and their
// weight-centric streamlined kernel.
//
// Layout of the packed weights (row-major [K][cols], K = I for W, H for R). The hidden units of
// each direction are split into blocks (one per thread and direction, in whole 16-unit cache
// lines; see plan_partition); within a block [j0, j1) of width w, the G gates of the block's
// units sit next to each other, gate-major: gate g of unit j0 + u at column G*j0 + g*w + u. So a
// thread's GEMM output holds every gate of its own units (the fused gate kernel then needs
// nothing from other threads), and a block's columns are one contiguous range. Biases and
// peepholes use the same block layout (gate_stride = w in ops/rnn/rnn_gates.h).
//
// The canonical GRU (linear_before_reset = 0) splits R into two groups: (z, r) packed as above
// with G = 2, and the h gate in plain column order; its step is GEMM(z,r) -> reset pass ->
// barrier (every thread needs all of r * h_prev) -> GEMM(h) -> output pass.
//
// Work split (DeepCPU 5.2.3 / 5.2.4): the recurrent GEMM C[B, D*G*H] = h R^T of one step is cut
// into xi x xj blocks (rows x units, no K split: a K split costs a second barrier per step)
// chosen by PCP's cross-step cost (ops/rnn/pcp_partition.h). Thread t owns the same block for the
// whole sequence; it also computes the input projection X W^T of that block (rows and columns
// of its own), so the hoisted GEMM needs no barrier before the recurrence, and its slice of R
// stays in its L2 across steps.
#include "ops/rnn/rnn_sequence.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <thread>

#include "ops/registry.h"
#include "ops/rnn/pcp_partition.h"
#include "ops/rnn/rnn_schedule.h"
#include "ops/rnn/spin_barrier.h"
#include "ops/rnn/team_wait.h"
#include "ops/rnn/tiled_gemm.h"
#include "ops/shape_rules.h"
#include "ops/xsmm.h"

namespace graphi::ops {

const char* rnn_cell_name(RnnCellKind kind) {
  switch (kind) {
    case RnnCellKind::kLstm:
      return "LSTM";
    case RnnCellKind::kGru:
      return "GRU";
    case RnnCellKind::kRnn:
      return "RNN";
  }
  return "?";
}

namespace {

constexpr int64_t kLine = 16;  // floats per 64-byte cache line
// Scratch floats per team member's step counter (ops/rnn/team_wait.h: two cache lines).
constexpr int64_t kFlagFloats = sizeof(TeamWord) / sizeof(float);

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// One core's private L2 (glibc reads it from cpuid), 1 MiB if unknown.
int64_t l2_bytes() {
  static const int64_t bytes = [] {
    const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? static_cast<int64_t>(v) : int64_t{1} << 20;
  }();
  return bytes;
}

RnnCellKind kind_of(const std::string& op) {
  if (op == "LSTM") return RnnCellKind::kLstm;
  if (op == "GRU") return RnnCellKind::kGru;
  return RnnCellKind::kRnn;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    size_t b = cur.find_first_not_of(" \t"), e = cur.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? std::string() : cur.substr(b, e - b + 1));
    cur.clear();
  };
  for (char c : s) {
    if (c == ',')
      flush();
    else
      cur += c;
  }
  flush();
  return out;
}

// "input 1 (W)"
std::string input_name(int i) {
  static const char* names[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
  return "input " + std::to_string(i) + " (" + names[i] + ")";
}

}  // namespace

Result<RnnSpec> rnn_spec(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                         size_t num_outputs, const std::string& where) {
  RnnSpec s;
  s.kind = kind_of(node.op);
  const bool lstm = s.kind == RnnCellKind::kLstm, gru = s.kind == RnnCellKind::kGru;
  const size_t max_inputs = lstm ? 8 : 6;
  const size_t max_outputs = lstm ? 3 : 2;
  const char* op = rnn_cell_name(s.kind);
  NodeView v{node, inputs, {}, where};
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 3, max_inputs, 3));
  if (num_outputs < 1 || num_outputs > max_outputs)
    return Status::invalid_graph(where + ": " + op + " has 1 to " + std::to_string(max_outputs) +
                                 " outputs (Y, Y_h" + (lstm ? ", Y_c" : "") + "), got " +
                                 std::to_string(num_outputs));
  s.num_outputs = static_cast<int>(num_outputs);

  // Attributes: known names only, so a typo is not silently ignored.
  std::vector<std::string> known = {
      "hidden_size",      "direction",       "layout",        "clip",        "activations",
      "activation_alpha", "activation_beta", kWcsShuffleAttr, kScheduleAttr, kScheduleSearchAttr};
  if (lstm) known.push_back("input_forget");
  if (gru) known.push_back("linear_before_reset");
  for (const auto& [name, value] : node.attrs.all()) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    return Status::invalid_graph(where + ": unknown attribute '" + name + "' for " + op +
                                 " (known: " + list + ")");
  }
  GRAPHI_ASSIGN_OR_RETURN(std::string direction,
                          graph::attr_string(node.attrs, where, "direction", "forward"));
  if (direction == "forward") {
    s.num_directions = 1;
  } else if (direction == "reverse") {
    s.num_directions = 1;
    s.reverse_only = true;
  } else if (direction == "bidirectional") {
    s.num_directions = 2;
  } else {
    return Status::invalid_graph(where +
                                 ": attribute 'direction' must be forward, reverse or "
                                 "bidirectional, got '" +
                                 direction + "'");
  }
  GRAPHI_ASSIGN_OR_RETURN(int64_t layout, graph::attr_int(node.attrs, where, "layout", 0));
  if (layout != 0 && layout != 1)
    return Status::invalid_graph(where + ": attribute 'layout' must be 0 or 1, got " +
                                 std::to_string(layout));
  s.layout = static_cast<int>(layout);
  if (node.attrs.has("clip")) {
    GRAPHI_ASSIGN_OR_RETURN(double clip, graph::attr_float(node.attrs, where, "clip", 0.0));
    if (!(clip > 0.0) || !std::isfinite(clip))
      return Status::invalid_graph(where +
                                   ": attribute 'clip' must be a positive finite number, got " +
                                   std::to_string(clip));
    s.clip = static_cast<float>(clip);
  }
  if (lstm) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t f, graph::attr_int(node.attrs, where, "input_forget", 0));
    if (f != 0 && f != 1)
      return Status::invalid_graph(where + ": attribute 'input_forget' must be 0 or 1, got " +
                                   std::to_string(f));
    s.input_forget = f == 1;
  }
  if (gru) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t l,
                            graph::attr_int(node.attrs, where, "linear_before_reset", 0));
    if (l != 0 && l != 1)
      return Status::invalid_graph(
          where + ": attribute 'linear_before_reset' must be 0 or 1, got " + std::to_string(l));
    s.linear_before_reset = l == 1;
  }
  GRAPHI_ASSIGN_OR_RETURN(int64_t shuffle, graph::attr_int(node.attrs, where, kWcsShuffleAttr, 0));
  if (shuffle != 0 && shuffle != 1)
    return Status::invalid_graph(where + ": attribute '" + std::string(kWcsShuffleAttr) +
                                 "' must be 0 or 1, got " + std::to_string(shuffle));
  s.wcs_shuffle = shuffle == 1;
  GRAPHI_ASSIGN_OR_RETURN(s.forced_schedule,
                          graph::attr_string(node.attrs, where, kScheduleAttr, ""));
  if (node.attrs.has(kScheduleSearchAttr)) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t search,
                            graph::attr_int(node.attrs, where, kScheduleSearchAttr, 0));
    if (search != 0 && search != 1)
      return Status::invalid_graph(where + ": attribute '" + std::string(kScheduleSearchAttr) +
                                   "' must be 0 or 1, got " + std::to_string(search));
    s.schedule_search = static_cast<int>(search);
  }
  // Activations: the ONNX defaults, and for RNN any of Tanh/Relu/Sigmoid per direction.
  {
    const int per_dir = lstm ? 3 : gru ? 2 : 1;
    const std::vector<std::string> defaults =
        lstm  ? std::vector<std::string>{"sigmoid", "tanh", "tanh"}
        : gru ? std::vector<std::string>{"sigmoid", "tanh"}
              : std::vector<std::string>{"tanh"};
    GRAPHI_ASSIGN_OR_RETURN(std::string acts,
                            graph::attr_string(node.attrs, where, "activations", ""));
    std::vector<std::string> names;
    if (!acts.empty()) names = split_names(acts);
    if (!names.empty() && names.size() != static_cast<size_t>(per_dir) &&
        names.size() != static_cast<size_t>(per_dir * s.num_directions))
      return Status::invalid_graph(where + ": attribute 'activations' = '" + acts + "' has " +
                                   std::to_string(names.size()) + " names; " + op + " needs " +
                                   std::to_string(per_dir) + " per direction (" +
                                   std::to_string(s.num_directions) + " direction" +
                                   (s.num_directions > 1 ? "s" : "") + ")");
    for (int d = 0; d < s.num_directions; ++d) {
      for (int k = 0; k < per_dir; ++k) {
        std::string name = defaults[k];
        if (!names.empty()) {
          const size_t idx = names.size() == static_cast<size_t>(per_dir) ? k : d * per_dir + k;
          name = lower(names[idx]);
        }
        if (s.kind == RnnCellKind::kRnn) {
          if (name == "tanh")
            s.activation[d] = RnnActivation::kTanh;
          else if (name == "relu")
            s.activation[d] = RnnActivation::kRelu;
          else if (name == "sigmoid")
            s.activation[d] = RnnActivation::kSigmoid;
          else
            return Status::unsupported(where + ": RNN activation '" + name +
                                       "' is not supported (Tanh, Relu or Sigmoid)");
        } else if (name != defaults[k]) {
          std::string want;
          for (const std::string& n : defaults) want += (want.empty() ? "" : ",") + n;
          return Status::unsupported(where + ": " + op + " activations '" + acts +
                                     "' are not supported; only the defaults (" + want +
                                     " per direction)");
        }
      }
    }
  }

  // After the activations, so an unsupported activation is named rather than its alpha.
  for (const char* a : {"activation_alpha", "activation_beta"}) {
    const graph::Attribute* attr = node.attrs.find(a);
    if (!attr) continue;
    const auto* floats = std::get_if<std::vector<double>>(attr);
    if (floats && floats->empty()) continue;
    return Status::unsupported(where + ": attribute '" + a +
                               "' is not supported (no supported activation takes parameters)");
  }

  // Shapes.
  for (int i : {kRnnX, kRnnW, kRnnR})
    if (inputs[i]->dtype != DType::kF32)
      return Status::invalid_graph(where + ": " + input_name(i) + " must be float32, got " +
                                   inputs[i]->to_string());
  const TensorDesc& x = *inputs[kRnnX];
  const TensorDesc& r = *inputs[kRnnR];
  if (x.rank() != 3)
    return Status::invalid_graph(where + ": " + input_name(kRnnX) + " must be 3-D " +
                                 (s.layout == 0 ? "[seq_length, batch_size, input_size]"
                                                : "[batch_size, seq_length, input_size]") +
                                 ", got " + x.to_string());
  if (r.rank() != 3)
    return Status::invalid_graph(where + ": " + input_name(kRnnR) +
                                 " must be 3-D [num_directions, G*hidden_size, hidden_size], got " +
                                 r.to_string());
  s.seq_len = s.layout == 0 ? x.shape[0] : x.shape[1];
  s.batch = s.layout == 0 ? x.shape[1] : x.shape[0];
  s.input_size = x.shape[2];
  if (s.seq_len < 1 || s.batch < 1 || s.input_size < 1)
    return Status::invalid_graph(
        where + ": " + input_name(kRnnX) + " " + x.to_string() +
        " has an empty dimension (sequence, batch and input sizes must be >= 1)");
  if (node.attrs.has("hidden_size")) {
    GRAPHI_ASSIGN_OR_RETURN(s.hidden, graph::attr_int(node.attrs, where, "hidden_size"));
    // Bounded so gates * hidden_size cannot overflow (a corrupt attribute, not a model).
    if (s.hidden < 1 || s.hidden >= (int64_t{1} << 31))
      return Status::invalid_graph(where + ": attribute 'hidden_size' must be in [1, 2^31), got " +
                                   std::to_string(s.hidden));
  } else {
    s.hidden = r.shape[2];
    if (s.hidden < 1)
      return Status::invalid_graph(where + ": " + input_name(kRnnR) + " " + r.to_string() +
                                   " gives hidden_size " + std::to_string(s.hidden));
  }
  s.gates = lstm ? 4 : gru ? 3 : 1;
  const int64_t D = s.num_directions, G = s.gates, H = s.hidden, B = s.batch;
  const std::string g_h = G == 1 ? "hidden_size" : std::to_string(G) + "*hidden_size";
  const std::string context = "from X " + x.to_string() + (s.layout ? " (layout 1)" : "") +
                              ", hidden_size " + std::to_string(H) + ", direction " + direction;
  auto expect = [&](int i, const Shape& want, const std::string& dims) -> Status {
    const TensorDesc& d = *inputs[i];
    if (d.shape == want) return Status::ok();
    return Status::invalid_graph(where + ": " + input_name(i) + " is " + d.to_string() +
                                 ", expected " + shape_to_string(want) + " = " + dims + " (" +
                                 context + ")");
  };
  GRAPHI_RETURN_IF_ERROR(
      expect(kRnnW, {D, G * H, s.input_size}, "[num_directions, " + g_h + ", input_size]"));
  GRAPHI_RETURN_IF_ERROR(
      expect(kRnnR, {D, G * H, H}, "[num_directions, " + g_h + ", hidden_size]"));
  auto present = [&](int i) {
    return static_cast<size_t>(i) < inputs.size() && inputs[i] != nullptr;
  };
  auto expect_f32 = [&](int i) -> Status {
    if (inputs[i]->dtype == DType::kF32) return Status::ok();
    return Status::invalid_graph(where + ": " + input_name(i) + " must be float32, got " +
                                 inputs[i]->to_string());
  };
  if (present(kRnnB)) {
    GRAPHI_RETURN_IF_ERROR(expect_f32(kRnnB));
    GRAPHI_RETURN_IF_ERROR(expect(kRnnB, {D, 2 * G * H}, "[num_directions, 2*" + g_h + "]"));
    s.has_bias = true;
  }
  if (present(kRnnSeqLens)) {
    const TensorDesc& d = *inputs[kRnnSeqLens];
    if (d.dtype != DType::kI32 && d.dtype != DType::kI64)
      return Status::invalid_graph(where + ": " + input_name(kRnnSeqLens) +
                                   " must be int32 or int64, got " + d.to_string());
    GRAPHI_RETURN_IF_ERROR(expect(kRnnSeqLens, {B}, "[batch_size]"));
    s.has_seq_lens = true;
    s.seq_lens_dtype = d.dtype;
  }
  const Shape state = s.layout == 0 ? Shape{D, B, H} : Shape{B, D, H};
  const std::string state_dims = s.layout == 0 ? "[num_directions, batch_size, hidden_size]"
                                               : "[batch_size, num_directions, hidden_size]";
  if (present(kRnnInitialH)) {
    GRAPHI_RETURN_IF_ERROR(expect_f32(kRnnInitialH));
    GRAPHI_RETURN_IF_ERROR(expect(kRnnInitialH, state, state_dims));
    s.has_initial_h = true;
  }
  if (lstm && present(kRnnInitialC)) {
    GRAPHI_RETURN_IF_ERROR(expect_f32(kRnnInitialC));
    GRAPHI_RETURN_IF_ERROR(expect(kRnnInitialC, state, state_dims));
    s.has_initial_c = true;
  }
  if (lstm && present(kRnnP)) {
    GRAPHI_RETURN_IF_ERROR(expect_f32(kRnnP));
    GRAPHI_RETURN_IF_ERROR(expect(kRnnP, {D, 3 * H}, "[num_directions, 3*hidden_size]"));
    s.has_peephole = true;
  }
  return s;
}

std::vector<TensorDesc> rnn_output_descs(const RnnSpec& s) {
  const int64_t D = s.num_directions, B = s.batch, H = s.hidden, T = s.seq_len;
  std::vector<TensorDesc> out;
  out.push_back({DType::kF32, s.layout == 0 ? Shape{T, D, B, H} : Shape{B, T, D, H}});
  const Shape state = s.layout == 0 ? Shape{D, B, H} : Shape{B, D, H};
  for (int i = 1; i < s.num_outputs; ++i) out.push_back({DType::kF32, state});
  return out;
}

namespace {

// One block of hidden units [j0, j1) of direction d, its packed weights and its GEMMs.
struct Segment {
  int d = 0;
  int64_t j0 = 0, j1 = 0;
  // The block's columns of W and R, each a contiguous slab of the packed buffer in panel-major
  // order (TiledGemm; a thread streams dense blocks: a strided slice of a shared [K][cols]
  // matrix was ~13% slower) with panels of pw_* columns.
  int64_t wp_off = 0, pw_w = 16, rp0_off = 0, pw_r0 = 16, rp1_off = 0, pw_r1 = 16;
  TiledGemm hoist;  // X rows * Wp[:, block columns]
  TiledGemm rec0;   // h_prev rows * Rp0[:, block columns]
  TiledGemm rec1;   // canonical GRU: (r * h_prev) rows * Rp1[:, block columns]
};

// What one thread computes at every step: batch rows [r0, r1) of its segments.
struct ThreadPlan {
  int64_t r0 = 0, r1 = 0;
  std::vector<Segment> segs;
  bool active() const { return !segs.empty() && r1 > r0; }
};

class RnnSequenceKernel final : public Kernel {
 public:
  explicit RnnSequenceKernel(RnnCellKind kind) : kind_(kind) {}

  const char* name() const override {
    switch (kind_) {
      case RnnCellKind::kLstm:
        return "lstm_wcs";
      case RnnCellKind::kGru:
        return "gru_wcs";
      case RnnCellKind::kRnn:
        return "rnn_wcs";
    }
    return "rnn_wcs";
  }
  size_t scratch_bytes() const override { return scratch_floats_ * sizeof(float); }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(s_, rnn_spec(ctx.node, ctx.inputs, ctx.outputs.size(), ctx.where));
    GRAPHI_RETURN_IF_ERROR(prepare(std::max(1, ctx.team_size)));
    auto is_const = [&](int i) {
      return static_cast<size_t>(i) < ctx.const_inputs.size() && ctx.const_inputs[i] != nullptr;
    };
    const_weights_ = is_const(kRnnW) && is_const(kRnnR) && (!s_.has_bias || is_const(kRnnB)) &&
                     (!s_.has_peephole || is_const(kRnnP));
    GRAPHI_ASSIGN_OR_RETURN(schedule_, choose_schedule(ctx.where));
    configure();
    if (const_weights_) {
      packed_ = Tensor(TensorDesc{DType::kF32, {packed_floats_}});
      WeightSources src{ctx.const_inputs[kRnnW]->data_as<float>(),
                        ctx.const_inputs[kRnnR]->data_as<float>(),
                        s_.has_bias ? ctx.const_inputs[kRnnB]->data_as<float>() : nullptr,
                        s_.has_peephole ? ctx.const_inputs[kRnnP]->data_as<float>() : nullptr};
      for (const Segment& seg : solo_.segs) pack_segment(src, seg, packed_.data_as<float>());
    }
    return Status::ok();
  }

  const RnnSchedule& schedule() const { return schedule_; }

  void run(const TeamContext& team, const Buffers& io) const noexcept override;

 private:
  struct WeightSources {
    const float* w;
    const float* r;
    const float* b;
    const float* p;
  };

  // Strides and size checks from s_ for a team of `team`.
  Status prepare(int team);
  // The schedule: forced by attribute, else cached / calibrated / the analytical default.
  Result<RnnSchedule> choose_schedule(const std::string& where);
  // Times `cands` on a shortened copy of this layer (zero weights and inputs); the fastest, or
  // nullopt when calibration cannot run here (nested parallelism, a team larger than the
  // machine).
  std::optional<RnnSchedule> calibrate(const std::vector<RnnSchedule>& cands,
                                       double budget_ms) const;
  // Plans, GEMMs and buffer offsets for schedule_ (weights not packed).
  void configure();
  void plan_partition();
  void make_gemms(ThreadPlan& p) const;
  void pack_segment(const WeightSources& src, const Segment& seg, float* packed) const;
  void hoist(const ThreadPlan& p, const float* x, const float* packed, float* xw, int64_t s0,
             int64_t s1) const noexcept;
  void init_state(const ThreadPlan& p, const Buffers& io, float* hb, float* cb) const noexcept;
  // One step of plan p; `barrier` (nullptr for a team of 1) for the canonical GRU's mid-step
  // barrier.
  // `wait_peers` (may be null): blocks until every peer finished step s - 1. With it, a
  // one-row plan (batch 1) computes the part of h_prev R^T that needs only its own units of
  // h_prev first and waits for the peers' units after that (see run()).
  struct PeerWait {
    void (*fn)(void* ctx) = nullptr;
    void* ctx = nullptr;
    void operator()() const {
      if (fn) fn(ctx);
    }
  };
  void step(const ThreadPlan& p, int64_t s, int64_t s0, int64_t s1, const Buffers& io,
            const float* packed, float* scratch, SpinBarrier* barrier,
            PeerWait wait_peers) const noexcept;
  // The recurrent GEMM of one step for segment seg: out rows = h rows * R group `group` (0: the
  // first group, all gates but the canonical GRU's h gate; 1: that h gate) of the segment's
  // columns, walking the panels last to first when `reverse` (zigzag). The one place the
  // recurrence reads R.
  void recurrent_gemm(const Segment& seg, int group, const float* packed, const float* h,
                      float* out, int64_t rows, bool reverse) const noexcept;
  // The same for one row, split at the segment's own units: part 0 = k in [j0, j1) (h_prev
  // units this thread computed itself), part 1 = the other k, accumulated.
  void recurrent_gemm_part(const Segment& seg, int part, const float* packed, const float* h,
                           float* out, bool reverse) const noexcept;
  void write_final(const ThreadPlan& p, const Buffers& io, const float* hb,
                   const float* cb) const noexcept;

  RnnCellKind kind_;
  RnnSpec s_;
  RnnSchedule schedule_;
  RnnLayerShape shape_;
  bool canonical_gru_ = false;
  int64_t g0_ = 1;  // gates in R's first group
  int team_ = 1;
  int64_t ldh_ = 0, dir_x_ = 0, ldx_ = 0, dir_gh0_ = 0, ld_gh0_ = 0, dir_gh1_ = 0, ld_gh1_ = 0,
          dir_p_ = 0;
  int64_t slabs_floats_ = 0;  // packed W and R slabs of every block
  int64_t chunk_ = 1;
  std::vector<ThreadPlan> plans_;  // one per team member (some may be idle)
  ThreadPlan solo_;                // everything, for a run on a team of another size
  bool const_weights_ = false;
  Tensor packed_;
  int64_t packed_floats_ = 0, bias_off_ = 0, bias_h_off_ = 0, peep_off_ = 0;
  int64_t flags_off_ = 0;  // per team member: its last finished step (TeamWord)
  int64_t scratch_floats_ = 0, xw_off_ = 0, gh0_off_ = 0, gh1_off_ = 0, hb_off_ = 0, cb_off_ = 0,
          zb_off_ = 0, rhb_off_ = 0, scratch_packed_off_ = 0;
};

Status RnnSequenceKernel::prepare(int team) {
  const int64_t D = s_.num_directions, G = s_.gates, H = s_.hidden, B = s_.batch, T = s_.seq_len,
                I = s_.input_size;
  for (int64_t v : {G * H, I, H, B * T})
    if (v > (1 << 30)) return Status::unsupported("sizes beyond LIBXSMM's int range");
  canonical_gru_ = kind_ == RnnCellKind::kGru && !s_.linear_before_reset;
  g0_ = canonical_gru_ ? 2 : G;
  team_ = team;

  // Strides (floats), each row padded to whole cache lines.
  // Row strides are an odd number of cache lines: with a multiple of 4 KiB (H = 256: 4H floats)
  // the rows of a microkernel's C tile all map to one L1 set and evict each other.
  auto skew = [](int64_t ld) { return (ld / kLine) % 2 == 0 ? ld + kLine : ld; };
  ldh_ = skew(round_up(H, kLine));
  dir_x_ = round_up(G * H, kLine);
  ldx_ = skew(D * dir_x_);
  dir_gh0_ = round_up(g0_ * H, kLine);
  ld_gh0_ = skew(D * dir_gh0_);
  dir_gh1_ = canonical_gru_ ? round_up(H, kLine) : 0;
  ld_gh1_ = canonical_gru_ ? skew(D * dir_gh1_) : 0;
  dir_p_ = round_up(3 * H, kLine);
  // LIBXSMM takes int strides; the layout-1 projection rows are B * ldx apart.
  if (B * ldx_ > (int64_t{1} << 30))
    return Status::unsupported("strides beyond LIBXSMM's int range (batch " + std::to_string(B) +
                               " x " + std::to_string(ldx_) + " gate columns)");

  shape_.cell = std::string(rnn_cell_name(kind_)) +
                (kind_ == RnnCellKind::kGru && s_.linear_before_reset ? "-lbr" : "");
  if (s_.layout == 1) shape_.cell += " layout1";
  shape_.seq_len = T;
  shape_.batch = B;
  shape_.input_size = I;
  shape_.hidden = H;
  shape_.directions = static_cast<int>(D);
  shape_.gates = static_cast<int>(g0_);
  shape_.canonical_gru = canonical_gru_;
  shape_.team = team_;
  shape_.l2_bytes = l2_bytes();
  return Status::ok();
}

void RnnSequenceKernel::configure() {
  const int64_t D = s_.num_directions, B = s_.batch, T = s_.seq_len;
  chunk_ = std::clamp<int64_t>(schedule_.chunk, 1, T);
  plan_partition();
  for (ThreadPlan& p : plans_) make_gemms(p);
  make_gemms(solo_);

  // Packed weights: the blocks' slabs (offsets set by plan_partition), then biases, peepholes.
  int64_t off = slabs_floats_;
  bias_off_ = off;  // LSTM/RNN: Wb + Rb; GRU: Wb
  off += s_.has_bias ? D * dir_x_ : 0;
  bias_h_off_ = off;  // GRU: Rb
  off += (s_.has_bias && kind_ == RnnCellKind::kGru) ? D * dir_x_ : 0;
  peep_off_ = off;
  off += s_.has_peephole ? D * dir_p_ : 0;
  packed_floats_ = off;

  // Scratch: barrier, hoisted projections, GEMM outputs, states, [packed weights].
  auto take = [&](int64_t floats) {
    const int64_t at = scratch_floats_;
    scratch_floats_ += round_up(floats, kLine);
    return at;
  };
  static_assert(sizeof(SpinBarrier) <= 64 * kLine, "barrier slot too small");
  scratch_floats_ = 0;
  take(sizeof(SpinBarrier) / sizeof(float) + 1);
  flags_off_ = take(team_ * kFlagFloats);
  xw_off_ = take(chunk_ * B * ldx_);
  gh0_off_ = take(B * ld_gh0_);
  gh1_off_ = take(B * ld_gh1_);
  hb_off_ = take(2 * D * B * ldh_);
  cb_off_ = take(kind_ == RnnCellKind::kLstm ? D * B * ldh_ : 0);
  zb_off_ = take(canonical_gru_ ? D * B * ldh_ : 0);
  rhb_off_ = take(canonical_gru_ ? D * B * ldh_ : 0);
  scratch_packed_off_ = take(const_weights_ ? 0 : packed_floats_);
}

namespace {

// Schedules already chosen in this process, by cache key (layers of one shape search once even
// when the cache file is unusable).
std::mutex& memo_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, RnnSchedule>& memo() {
  static std::map<std::string, RnnSchedule> m;
  return m;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<RnnSchedule> RnnSequenceKernel::choose_schedule(const std::string& where) {
  const int64_t B = s_.batch, lines = (s_.hidden + kLine - 1) / kLine;
  if (!s_.forced_schedule.empty()) {
    // "threads,xi,xj,chunk,tile,zigzag" (tests and experiments).
    std::vector<int64_t> v;
    for (const std::string& part : split_names(s_.forced_schedule)) {
      char* end = nullptr;
      const long long x = std::strtoll(part.c_str(), &end, 10);
      if (part.empty() || !end || *end) {
        v.clear();
        break;
      }
      v.push_back(x);
    }
    RnnSchedule r;
    if (v.size() == 6) {
      r.threads = static_cast<int>(v[0]);
      r.xi = static_cast<int>(v[1]);
      r.xj = static_cast<int>(v[2]);
      r.chunk = v[3];
      r.rec_tile = static_cast<int>(v[4]);
      r.zigzag = v[5] == 1;
    }
    if (v.size() != 6 || r.threads < 1 || r.threads > team_ || r.xi < 1 || r.xj < 1 ||
        int64_t{r.xi} * r.xj != r.threads || r.xi > B || r.xj > s_.num_directions * lines ||
        r.chunk < 1 || r.rec_tile < 16 || r.rec_tile > 4096 || r.rec_tile % 16 != 0 ||
        (v[5] != 0 && v[5] != 1))
      return Status::invalid_graph(
          where + ": attribute '" + std::string(kScheduleAttr) + "' = '" + s_.forced_schedule +
          "' is not a valid schedule for this layer (threads,xi,xj,chunk,tile,zigzag with " +
          "1 <= threads = xi*xj <= team " + std::to_string(team_) + ", xi <= batch " +
          std::to_string(B) + ", xj <= " + std::to_string(s_.num_directions * lines) +
          " unit lines, chunk >= 1, tile a multiple of 16 in [16, 4096], zigzag 0|1)");
    return r;
  }
  const RnnSchedule fallback = default_rnn_schedule(shape_);
  const bool search =
      s_.schedule_search >= 0 ? s_.schedule_search == 1 : rnn_schedule_search_enabled_by_env();
  if (!search || s_.wcs_shuffle) return fallback;
  // Left to the environment, tiny layers (< 1 MFLOP of GEMMs, a few microseconds) keep the
  // default: calibrating them would cost more than it could ever save.
  const double flops = 2.0 * double(s_.seq_len) * double(s_.batch) * double(s_.num_directions) *
                       double(s_.input_size + s_.hidden) * double(s_.gates * s_.hidden);
  if (s_.schedule_search < 0 && flops < 1e6) return fallback;
  const std::string key = shape_.key(), sig = cpu_signature();
  {
    std::lock_guard<std::mutex> lock(memo_mutex());
    auto it = memo().find(key);
    if (it != memo().end()) return it->second;
  }
  const std::vector<RnnSchedule> cands = rnn_schedule_candidates(shape_);
  const std::string path = rnn_schedule_cache_path();
  std::optional<RnnSchedule> chosen = load_cached_schedule(path, key, sig);
  // A cached entry must still be one of this layer's candidates (else: recompute).
  if (chosen && std::find(cands.begin(), cands.end(), *chosen) == cands.end()) chosen.reset();
  if (!chosen) {
    chosen = calibrate(cands, rnn_schedule_search_budget_ms());
    if (!chosen) return fallback;  // cannot calibrate here; do not cache
    if (!path.empty()) {
      Status st = store_cached_schedule(path, key, sig, *chosen);
      if (!st.is_ok())
        std::fprintf(stderr, "graphi: warning: cannot write RNN schedule cache %s: %s\n",
                     path.c_str(), st.message().c_str());
    }
  }
  std::lock_guard<std::mutex> lock(memo_mutex());
  memo()[key] = *chosen;
  return *chosen;
}

std::optional<RnnSchedule> RnnSequenceKernel::calibrate(const std::vector<RnnSchedule>& cands,
                                                        double budget_ms) const {
  if (cands.empty() || omp_in_parallel() || team_ > omp_get_num_procs()) return std::nullopt;
  if (cands.size() == 1) {
    RnnSchedule r = cands[0];
    r.searched = true;
    return r;
  }
  // A shortened copy of the layer: every step costs the same (rule i), so a part of the sequence
  // ranks the schedules: 16 steps to estimate the per-step cost, then as many steps (up to T)
  // as the budget allows for three runs (one warm-up, the best of two) of every candidate;
  // short runs of small layers are mostly timer and wake-up noise. No lengths, no initial
  // states, Y only, zero weights and inputs.
  const double start = now_ms();
  std::atomic<bool> ok{true};
  auto shortened = [&](int64_t steps) {
    auto k = std::make_unique<RnnSequenceKernel>(kind_);
    k->s_ = s_;
    k->s_.seq_len = std::min<int64_t>(s_.seq_len, steps);
    k->s_.has_seq_lens = k->s_.has_initial_h = k->s_.has_initial_c = false;
    k->s_.num_outputs = 1;
    k->s_.wcs_shuffle = false;
    k->const_weights_ = true;
    if (!k->prepare(team_).is_ok()) k.reset();
    return k;
  };
  // Best of `reps` timed runs (after one warm-up) of schedule `c` on kernel k; inf on failure.
  auto time_schedule = [&](RnnSequenceKernel& k, const RnnSchedule& c, int reps) {
    const int64_t T = k.s_.seq_len, B = s_.batch, D = s_.num_directions, H = s_.hidden;
    Tensor x(TensorDesc{DType::kF32, {T * B * s_.input_size}});
    Tensor y(TensorDesc{DType::kF32, {T * D * B * H}});
    std::memset(x.data(), 0, x.desc().bytes());
    const void* ins[8] = {x.data(), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
    void* outs[1] = {y.data()};
    const Buffers io{std::span<const void* const>(ins, 8), std::span<void* const>(outs, 1)};
    k.schedule_ = c;
    k.configure();
    k.packed_ = Tensor(TensorDesc{DType::kF32, {k.packed_floats_}});
    std::memset(k.packed_.data(), 0, k.packed_.desc().bytes());
    Tensor scratch(TensorDesc{DType::kF32, {std::max<int64_t>(k.scratch_floats_, 16)}});
    double best_ms = std::numeric_limits<double>::infinity();
    for (int rep = 0; rep <= reps && ok; ++rep) {
      double t0 = 0, t1 = 0;
#pragma omp parallel num_threads(team_)
      {
        if (omp_get_num_threads() != team_) ok = false;
#pragma omp barrier
        if (ok) {
          if (omp_get_thread_num() == 0) t0 = now_ms();
          k.run(TeamContext{omp_get_thread_num(), team_, scratch.data(),
                            static_cast<size_t>(k.scratch_floats_) * sizeof(float)},
                io);
#pragma omp barrier
          if (omp_get_thread_num() == 0) t1 = now_ms();
        }
      }
      if (ok && rep > 0) best_ms = std::min(best_ms, t1 - t0);
    }
    return best_ms;
  };
  auto k = shortened(16);
  if (!k) return std::nullopt;
  const double probe_ms = time_schedule(*k, cands[0], 1);
  if (!ok) return std::nullopt;
  const double per_step = probe_ms / double(k->s_.seq_len);
  const int64_t steps = std::clamp<int64_t>(
      static_cast<int64_t>(budget_ms / (3.0 * double(cands.size()) * std::max(per_step, 1e-6))), 16,
      s_.seq_len);
  if (steps > k->s_.seq_len) {
    k = shortened(steps);
    if (!k) return std::nullopt;
  }
  bool announced = false;
  std::optional<RnnSchedule> best;
  for (size_t ci = 0; ci < cands.size(); ++ci) {
    const double elapsed = now_ms() - start;
    if (ci > 0 && elapsed > budget_ms) break;
    if (!announced && elapsed > 500) {
      std::fprintf(stderr, "graphi: calibrating %s schedules (%zu candidates, %lld steps)...\n",
                   shape_.key().c_str(), cands.size(), static_cast<long long>(k->s_.seq_len));
      announced = true;
    }
    const double ms = time_schedule(*k, cands[ci], 2);
    if (!ok) return std::nullopt;
    if (!best || ms < best->measured_ms) {
      best = cands[ci];
      best->measured_ms = ms;
      best->searched = true;
    }
  }
  if (announced)
    std::fprintf(stderr, "graphi: %s -> %s after %.0f ms\n", shape_.key().c_str(),
                 best->to_string().c_str(), now_ms() - start);
  return best;
}

// Cut the (direction, 16-unit line) space into the schedule's xj ranges and the batch into its
// xi row ranges; threads >= xi * xj idle. (The analytical default comes from PCP's cross-step
// cost, ops/rnn/rnn_schedule.cpp. Measured on 2 cores, LSTM H = 256, T = 100: it picks the unit
// split at batch 10 (4.2 ms vs 4.8 ms for the row split) and the row split at batch 20 (7.9 vs
// 8.4 ms) and 64 (25.7 vs 26.8 ms), the faster one each time.)
void RnnSequenceKernel::plan_partition() {
  const int64_t D = s_.num_directions, G = s_.gates, H = s_.hidden, B = s_.batch;
  const int64_t lines = (H + kLine - 1) / kLine;
  const int64_t total = D * lines;
  const int best_xi = schedule_.xi, best_xj = schedule_.xj;
  auto segments_of = [&](int64_t l0, int64_t l1) {
    std::vector<Segment> segs;
    for (int d = 0; d < D; ++d) {
      const int64_t a = std::max(l0, d * lines) - d * lines,
                    b = std::min(l1, (d + 1) * lines) - d * lines;
      if (a >= b) continue;
      Segment seg;
      seg.d = d;
      seg.j0 = a * kLine;
      seg.j1 = std::min(H, b * kLine);
      segs.push_back(std::move(seg));
    }
    return segs;
  };
  plans_.assign(team_, ThreadPlan{});
  for (int t = 0; t < best_xi * best_xj; ++t) {
    const int q = t % best_xj, r = t / best_xj;
    auto [l0, l1] = team_range(total, q, best_xj);
    auto [r0, r1] = team_range(B, r, best_xi);
    plans_[t].r0 = r0;
    plans_[t].r1 = r1;
    plans_[t].segs = segments_of(l0, l1);
  }
  // The solo plan walks the same blocks (the packed layout depends on them) with all rows.
  solo_.r0 = 0;
  solo_.r1 = B;
  solo_.segs.clear();
  for (int q = 0; q < best_xj; ++q) {
    auto [l0, l1] = team_range(total, q, best_xj);
    for (Segment& seg : segments_of(l0, l1)) solo_.segs.push_back(std::move(seg));
  }
  std::stable_sort(solo_.segs.begin(), solo_.segs.end(),
                   [](const Segment& a, const Segment& b) { return a.d < b.d; });
  // One slab per block, each starting on a cache line.
  slabs_floats_ = 0;
  // Panel widths: the schedule's for the recurrent GEMM; for the hoisted one, wide panels only
  // when its calls are GEMV-like (per-step schedule at batch 1).
  // Rows per hoisted call (see hoist()): a chunk of one batch entry (layout 1), all rows of a
  // chunk (layout 0, whole batch), or one step's share of the rows (layout 0, row split).
  const int64_t hoist_rows = s_.layout == 1 ? chunk_
                             : best_xi == 1 ? chunk_ * B
                                            : (B + best_xi - 1) / best_xi;
  for (Segment& seg : solo_.segs) {
    const int64_t w = seg.j1 - seg.j0;
    auto panel = [&](int64_t cols, int64_t want) {
      return std::min(round_up(cols, kLine), round_up(std::max<int64_t>(want, kLine), kLine));
    };
    seg.pw_w = panel(G * w, hoist_rows <= 2 ? 256 : 32);
    seg.pw_r0 = panel(g0_ * w, schedule_.rec_tile);
    seg.pw_r1 = panel(w, schedule_.rec_tile);
    seg.wp_off = slabs_floats_;
    slabs_floats_ += TiledGemm::packed_floats(G * w, s_.input_size, seg.pw_w);
    seg.rp0_off = slabs_floats_;
    slabs_floats_ += TiledGemm::packed_floats(g0_ * w, H, seg.pw_r0);
    seg.rp1_off = slabs_floats_;
    slabs_floats_ += canonical_gru_ ? TiledGemm::packed_floats(w, H, seg.pw_r1) : 0;
  }
  for (ThreadPlan& p : plans_)
    for (Segment& seg : p.segs)
      for (const Segment& b : solo_.segs)
        if (b.d == seg.d && b.j0 == seg.j0) {
          seg.wp_off = b.wp_off;
          seg.pw_w = b.pw_w;
          seg.rp0_off = b.rp0_off;
          seg.pw_r0 = b.pw_r0;
          seg.rp1_off = b.rp1_off;
          seg.pw_r1 = b.pw_r1;
        }
}

void RnnSequenceKernel::make_gemms(ThreadPlan& p) const {
  if (!p.active()) return;
  const int64_t B = s_.batch, T = s_.seq_len, I = s_.input_size, H = s_.hidden;
  const int64_t rows = p.r1 - p.r0;
  const bool full_rows = rows == B;
  // Row counts of the hoisted GEMM calls (see hoist()).
  std::set<int64_t> hoist_ns;
  for (int64_t s0 = 0; s0 < T; s0 += chunk_) {
    const int64_t len = std::min(chunk_, T - s0);
    if (s_.layout == 1)
      hoist_ns.insert(len);
    else
      hoist_ns.insert(full_rows ? len * B : rows);
  }
  const int64_t hoist_ldc = s_.layout == 1 ? B * ldx_ : ldx_;
  for (Segment& seg : p.segs) {
    const int64_t w = seg.j1 - seg.j0;
    seg.hoist = TiledGemm::create_panels(s_.gates * w, I, seg.pw_w, I, hoist_ldc, hoist_ns);
    seg.rec0 = TiledGemm::create_panels(g0_ * w, H, seg.pw_r0, ldh_, ld_gh0_, {rows});
    if (canonical_gru_) seg.rec1 = TiledGemm::create_panels(w, H, seg.pw_r1, ldh_, ld_gh1_, {rows});
  }
}

void RnnSequenceKernel::pack_segment(const WeightSources& src, const Segment& seg,
                                     float* packed) const {
  const int64_t D = s_.num_directions, G = s_.gates, H = s_.hidden, I = s_.input_size;
  (void)D;
  const int d = seg.d;
  const int64_t j0 = seg.j0, w = seg.j1 - seg.j0;
  const float* W = src.w + d * G * H * I;
  const float* R = src.r + d * G * H * H;
  float* wp = packed + seg.wp_off;
  for (int64_t g = 0; g < G; ++g)
    for (int64_t u = 0; u < w; ++u) {
      const float* row = W + (g * H + j0 + u) * I;
      const int64_t col = g * w + u;
      for (int64_t k = 0; k < I; ++k) wp[TiledGemm::panel_offset(col, k, I, seg.pw_w)] = row[k];
    }
  float* rp0 = packed + seg.rp0_off;
  for (int64_t g = 0; g < g0_; ++g)
    for (int64_t u = 0; u < w; ++u) {
      const float* row = R + (g * H + j0 + u) * H;
      const int64_t col = g * w + u;
      for (int64_t k = 0; k < H; ++k) rp0[TiledGemm::panel_offset(col, k, H, seg.pw_r0)] = row[k];
    }
  if (canonical_gru_) {
    float* rp1 = packed + seg.rp1_off;
    for (int64_t u = 0; u < w; ++u) {
      const float* row = R + (2 * H + j0 + u) * H;
      for (int64_t k = 0; k < H; ++k) rp1[TiledGemm::panel_offset(u, k, H, seg.pw_r1)] = row[k];
    }
  }
  if (src.b) {
    const float* wb = src.b + d * 2 * G * H;
    const float* rb = wb + G * H;
    float* bias = packed + bias_off_ + d * dir_x_;
    float* bias_h = packed + bias_h_off_ + d * dir_x_;
    for (int64_t g = 0; g < G; ++g)
      for (int64_t u = 0; u < w; ++u) {
        const int64_t col = G * j0 + g * w + u, j = g * H + j0 + u;
        if (kind_ == RnnCellKind::kGru) {
          bias[col] = wb[j];
          bias_h[col] = rb[j];
        } else {
          bias[col] = wb[j] + rb[j];
        }
      }
  }
  if (src.p) {
    const float* pv = src.p + d * 3 * H;
    float* pp = packed + peep_off_ + d * dir_p_;
    for (int64_t g = 0; g < 3; ++g)
      for (int64_t u = 0; u < w; ++u) pp[3 * j0 + g * w + u] = pv[g * H + j0 + u];
  }
}

// X W^T for plan p's rows and segments over steps [s0, s1). Row (t - window_begin) * B + b of
// xw holds time t, batch b, so each direction's window of times fills the same rows.
void RnnSequenceKernel::hoist(const ThreadPlan& p, const float* x, const float* packed, float* xw,
                              int64_t s0, int64_t s1) const noexcept {
  const int64_t B = s_.batch, G = s_.gates;
  const int64_t len = s1 - s0;
  for (const Segment& seg : p.segs) {
    const int64_t t0 = s_.window_begin(seg.d, s0, s1);
    const float* wp = packed + seg.wp_off;
    float* out = xw + seg.d * dir_x_ + G * seg.j0;
    if (s_.layout == 1) {
      for (int64_t b = p.r0; b < p.r1; ++b)
        seg.hoist.run(wp, x + s_.x_row(t0, b), out + b * ldx_, len);
    } else if (p.r1 - p.r0 == B) {
      seg.hoist.run(wp, x + s_.x_row(t0, 0), out, len * B);
    } else {
      for (int64_t t = 0; t < len; ++t)
        seg.hoist.run(wp, x + s_.x_row(t0 + t, p.r0), out + (t * B + p.r0) * ldx_, p.r1 - p.r0);
    }
  }
}

void RnnSequenceKernel::init_state(const ThreadPlan& p, const Buffers& io, float* hb,
                                   float* cb) const noexcept {
  const int64_t B = s_.batch;
  const float* h0 = s_.has_initial_h ? static_cast<const float*>(io.inputs[kRnnInitialH]) : nullptr;
  const float* c0 = s_.has_initial_c ? static_cast<const float*>(io.inputs[kRnnInitialC]) : nullptr;
  for (const Segment& seg : p.segs)
    for (int64_t b = p.r0; b < p.r1; ++b) {
      float* h = hb + (seg.d * B + b) * ldh_;
      if (h0)
        std::memcpy(h + seg.j0, h0 + s_.state_row(seg.d, b) + seg.j0,
                    (seg.j1 - seg.j0) * sizeof(float));
      else
        std::fill(h + seg.j0, h + seg.j1, 0.0f);
      if (kind_ == RnnCellKind::kLstm) {
        float* c = cb + (seg.d * B + b) * ldh_;
        if (c0)
          std::memcpy(c + seg.j0, c0 + s_.state_row(seg.d, b) + seg.j0,
                      (seg.j1 - seg.j0) * sizeof(float));
        else
          std::fill(c + seg.j0, c + seg.j1, 0.0f);
      }
    }
}

void RnnSequenceKernel::recurrent_gemm(const Segment& seg, int group, const float* packed,
                                       const float* h, float* out, int64_t rows,
                                       bool reverse) const noexcept {
  if (group == 0)
    seg.rec0.run(packed + seg.rp0_off, h, out, rows, reverse);
  else
    seg.rec1.run(packed + seg.rp1_off, h, out, rows, reverse);
}

void RnnSequenceKernel::recurrent_gemm_part(const Segment& seg, int part, const float* packed,
                                            const float* h, float* out,
                                            bool reverse) const noexcept {
  const float* r = packed + seg.rp0_off;
  if (part == 0) {
    seg.rec0.run_row_k_range(r, h, out, seg.j0, seg.j1, false, reverse);
  } else {
    seg.rec0.run_row_k_range(r, h, out, 0, seg.j0, true, reverse);
    seg.rec0.run_row_k_range(r, h, out, seg.j1, s_.hidden, true, reverse);
  }
}

void RnnSequenceKernel::step(const ThreadPlan& p, int64_t s, int64_t s0, int64_t s1,
                             const Buffers& io, const float* packed, float* scratch,
                             SpinBarrier* barrier, PeerWait wait_peers) const noexcept {
  const int64_t B = s_.batch, G = s_.gates, T = s_.seq_len;
  const int64_t DBH = s_.num_directions * B * ldh_;
  const float* hprev_all = scratch + hb_off_ + (s & 1) * DBH;
  float* hnext_all = scratch + hb_off_ + ((s + 1) & 1) * DBH;
  const float* xw = scratch + xw_off_;
  float* gh0 = scratch + gh0_off_;
  float* y = static_cast<float*>(io.outputs[0]);
  const void* lens = s_.has_seq_lens ? io.inputs[kRnnSeqLens] : nullptr;
  const bool has_bias = s_.has_bias;
  // At step 0 without initial_h, h_prev R^T is zero: LSTM and RNN skip the GEMM.
  const bool zero_h = s == 0 && !s_.has_initial_h;
  const bool active_p = p.active();
  const bool zig = schedule_.zigzag && (s & 1);

  // Calls f(ra, rb) for each run of rows in [r0, r1) whose sequence covers time tt.
  auto for_active_runs = [&](int64_t tt, auto&& f) {
    if (!lens) {
      f(p.r0, p.r1);
      return;
    }
    int64_t b = p.r0;
    while (b < p.r1) {
      while (b < p.r1 && s_.seq_len_of(lens, b) <= tt) ++b;
      const int64_t a = b;
      while (b < p.r1 && s_.seq_len_of(lens, b) > tt) ++b;
      if (a < b) f(a, b);
    }
  };
  // Y for this step (h or 0), and h carried over for rows past their length.
  auto finish_rows = [&](const Segment& seg, int64_t tt) {
    const int64_t w = seg.j1 - seg.j0;
    const float* hprev = hprev_all + seg.d * B * ldh_;
    float* hnext = hnext_all + seg.d * B * ldh_;
    for (int64_t b = p.r0; b < p.r1; ++b) {
      float* yr = y + s_.y_row(tt, seg.d, b) + seg.j0;
      float* hn = hnext + b * ldh_ + seg.j0;
      if (s_.seq_len_of(lens, b) > tt) {
        std::memcpy(yr, hn, w * sizeof(float));
      } else {
        std::memcpy(hn, hprev + b * ldh_ + seg.j0, w * sizeof(float));
        std::fill(yr, yr + w, 0.0f);
      }
    }
  };
  auto time_of = [&](int d) { return s_.is_reverse(d) ? T - 1 - s : s; };
  auto xg_of = [&](const Segment& seg, int64_t tt) {
    return xw + (tt - s_.window_begin(seg.d, s0, s1)) * B * ldx_ + seg.d * dir_x_ + G * seg.j0;
  };

  // Split: a one-row plan with peers to wait for starts on its own units of h_prev (zigzag
  // keeps the plain walk: its panel order is what keeps weights in L2).
  const bool split = wait_peers.fn && p.r1 - p.r0 == 1 && !schedule_.zigzag;
  if (!split) wait_peers();
  auto gh_of = [&](const Segment& seg) { return gh0 + seg.d * dir_gh0_ + g0_ * seg.j0; };
  auto hrow_of = [&](const Segment& seg) { return hprev_all + seg.d * B * ldh_ + p.r0 * ldh_; };
  if (split) {
    const bool skip = zero_h && kind_ != RnnCellKind::kGru;  // no GEMM at all
    if (active_p && !skip)
      for (const Segment& seg : p.segs)
        recurrent_gemm_part(seg, 0, packed, hrow_of(seg), gh_of(seg) + p.r0 * ld_gh0_, false);
    wait_peers();
    if (active_p && !skip)
      for (const Segment& seg : p.segs)
        recurrent_gemm_part(seg, 1, packed, hrow_of(seg), gh_of(seg) + p.r0 * ld_gh0_, false);
  }

  if (kind_ == RnnCellKind::kLstm || kind_ == RnnCellKind::kRnn) {
    if (!active_p) return;
    for (const Segment& seg : p.segs) {
      const int d = seg.d;
      const int64_t w = seg.j1 - seg.j0, tt = time_of(d);
      const float* hprev = hprev_all + d * B * ldh_;
      float* gh = gh0 + d * dir_gh0_ + G * seg.j0;
      if (!zero_h && !split)
        recurrent_gemm(seg, 0, packed, hprev + p.r0 * ldh_, gh + p.r0 * ld_gh0_, p.r1 - p.r0, zig);
      const float* xg = xg_of(seg, tt);
      float* hnext = hnext_all + d * B * ldh_ + seg.j0;
      if (kind_ == RnnCellKind::kLstm) {
        LstmGateArgs a;
        a.hidden = w;
        a.gate_stride = w;
        a.gates_x = xg;
        a.ld_gates_x = ldx_;
        a.gates_h = zero_h ? nullptr : gh;
        a.ld_gates_h = ld_gh0_;
        a.bias = has_bias ? packed + bias_off_ + d * dir_x_ + G * seg.j0 : nullptr;
        a.peephole = s_.has_peephole ? packed + peep_off_ + d * dir_p_ + 3 * seg.j0 : nullptr;
        float* c = scratch + cb_off_ + d * B * ldh_ + seg.j0;
        a.c_prev = c;
        a.ld_c_prev = ldh_;
        a.c = c;
        a.ld_c = ldh_;
        a.h = hnext;
        a.ld_h = ldh_;
        a.clip = s_.clip;
        a.input_forget = s_.input_forget;
        for_active_runs(tt, [&](int64_t ra, int64_t rb) { lstm_gates(a, GateTile{ra, rb, 0, w}); });
      } else {
        RnnGateArgs a;
        a.hidden = w;
        a.gates_x = xg;
        a.ld_gates_x = ldx_;
        a.gates_h = zero_h ? nullptr : gh;
        a.ld_gates_h = ld_gh0_;
        a.bias = has_bias ? packed + bias_off_ + d * dir_x_ + seg.j0 : nullptr;
        a.h = hnext;
        a.ld_h = ldh_;
        a.clip = s_.clip;
        a.activation = s_.activation[d];
        for_active_runs(tt, [&](int64_t ra, int64_t rb) { rnn_gates(a, GateTile{ra, rb, 0, w}); });
      }
      finish_rows(seg, tt);
    }
    return;
  }

  // GRU.
  auto gru_args = [&](const Segment& seg, int64_t tt) {
    const int d = seg.d;
    GruGateArgs a;
    a.hidden = seg.j1 - seg.j0;
    a.gate_stride = a.hidden;
    a.gates_x = xg_of(seg, tt);
    a.ld_gates_x = ldx_;
    a.gates_h = gh0 + d * dir_gh0_ + g0_ * seg.j0;
    a.ld_gates_h = ld_gh0_;
    a.bias_x = has_bias ? packed + bias_off_ + d * dir_x_ + G * seg.j0 : nullptr;
    a.bias_h = has_bias ? packed + bias_h_off_ + d * dir_x_ + G * seg.j0 : nullptr;
    a.h_prev = hprev_all + d * B * ldh_ + seg.j0;
    a.ld_h_prev = ldh_;
    a.h = hnext_all + d * B * ldh_ + seg.j0;
    a.ld_h = ldh_;
    a.clip = s_.clip;
    return a;
  };
  if (active_p) {
    for (const Segment& seg : p.segs) {
      const int d = seg.d;
      const int64_t tt = time_of(d), w = seg.j1 - seg.j0;
      const float* hprev = hprev_all + d * B * ldh_;
      GruGateArgs a = gru_args(seg, tt);
      if (!split)
        recurrent_gemm(seg, 0, packed, hprev + p.r0 * ldh_,
                       gh0 + d * dir_gh0_ + g0_ * seg.j0 + p.r0 * ld_gh0_, p.r1 - p.r0, zig);
      if (!canonical_gru_) {
        for_active_runs(tt, [&](int64_t ra, int64_t rb) {
          gru_gates_lbr(a, GateTile{ra, rb, 0, w});
        });
        finish_rows(seg, tt);
      } else {
        a.z = scratch + zb_off_ + d * B * ldh_ + seg.j0;
        a.ld_z = ldh_;
        a.rh = scratch + rhb_off_ + d * B * ldh_ + seg.j0;
        a.ld_rh = ldh_;
        gru_gates_reset(a, GateTile{p.r0, p.r1, 0, w});
      }
    }
  }
  if (!canonical_gru_) return;
  if (barrier) barrier->wait();  // every thread's r * h_prev is in rhb
  if (!active_p) return;
  for (const Segment& seg : p.segs) {
    const int d = seg.d;
    const int64_t tt = time_of(d), w = seg.j1 - seg.j0;
    float* ghh = scratch + gh1_off_ + d * dir_gh1_ + seg.j0;
    recurrent_gemm(seg, 1, packed, scratch + rhb_off_ + (d * B + p.r0) * ldh_, ghh + p.r0 * ld_gh1_,
                   p.r1 - p.r0, zig);
    GruGateArgs a = gru_args(seg, tt);
    a.gates_hh = ghh;
    a.ld_gates_hh = ld_gh1_;
    a.z = scratch + zb_off_ + d * B * ldh_ + seg.j0;
    a.ld_z = ldh_;
    for_active_runs(tt, [&](int64_t ra, int64_t rb) {
      gru_gates_output(a, GateTile{ra, rb, 0, w});
    });
    finish_rows(seg, tt);
  }
}

void RnnSequenceKernel::write_final(const ThreadPlan& p, const Buffers& io, const float* hb,
                                    const float* cb) const noexcept {
  if (s_.num_outputs < 2 || !p.active()) return;
  const int64_t B = s_.batch;
  float* yh = static_cast<float*>(io.outputs[1]);
  float* yc = s_.num_outputs > 2 ? static_cast<float*>(io.outputs[2]) : nullptr;
  for (const Segment& seg : p.segs)
    for (int64_t b = p.r0; b < p.r1; ++b) {
      const size_t bytes = (seg.j1 - seg.j0) * sizeof(float);
      std::memcpy(yh + s_.state_row(seg.d, b) + seg.j0, hb + (seg.d * B + b) * ldh_ + seg.j0,
                  bytes);
      if (yc)
        std::memcpy(yc + s_.state_row(seg.d, b) + seg.j0, cb + (seg.d * B + b) * ldh_ + seg.j0,
                    bytes);
    }
}

void RnnSequenceKernel::run(const TeamContext& team, const Buffers& io) const noexcept {
  // A team of another size than init's (the runtime may give fewer threads): member 0 runs
  // every block alone, the others have nothing to do.
  const bool solo = team.nthr != team_;
  if (solo && team.ithr != 0) return;
  const int nthr = solo ? 1 : team.nthr;
  const int ithr = solo ? 0 : team.ithr;
  float* scratch = static_cast<float*>(team.scratch);
  SpinBarrier* barrier = reinterpret_cast<SpinBarrier*>(scratch);
  const ThreadPlan& own = solo ? solo_ : plans_[ithr];
  const int64_t T = s_.seq_len;
  const float* x = static_cast<const float*>(io.inputs[kRnnX]);

  // Phase 0: per-run set-up of this thread's share; one OpenMP barrier publishes it all.
  if (ithr == 0 && nthr > 1) new (barrier) SpinBarrier(nthr);
  auto flag = [&](int t) {
    return reinterpret_cast<TeamWord*>(scratch + flags_off_ + t * kFlagFloats);
  };
  if (nthr > 1) new (flag(ithr)) TeamWord();
  const float* packed = const_weights_ ? packed_.data_as<float>() : scratch + scratch_packed_off_;
  if (!const_weights_ && own.active() && own.r0 == 0) {
    WeightSources src{static_cast<const float*>(io.inputs[kRnnW]),
                      static_cast<const float*>(io.inputs[kRnnR]),
                      s_.has_bias ? static_cast<const float*>(io.inputs[kRnnB]) : nullptr,
                      s_.has_peephole ? static_cast<const float*>(io.inputs[kRnnP]) : nullptr};
    for (const Segment& seg : own.segs) pack_segment(src, seg, scratch + scratch_packed_off_);
  }
  init_state(own, io, scratch + hb_off_, scratch + cb_off_);
  if (nthr > 1) {
#pragma omp barrier
  }

  // The recurrence. Thread ithr computes plan ithr at every step (weight-centric
  // streamlining), or plan (ithr + step) mod nthr with the shuffle knob.
  const bool shuffle = s_.wcs_shuffle && nthr > 1;
  // With batch rows as the only split (xj = 1) a thread owns every unit of its rows: its h rows
  // depend on nothing another thread computes, so the threads run the steps without meeting.
  const bool sync = nthr > 1 && (shuffle || schedule_.xj > 1);
  // The per-step exchange as per-thread step counters instead of the central barrier: each
  // member publishes "step s done" on its own cache line and waits for the others' lines, one
  // cache-line transfer instead of an atomic read-modify-write chain plus a release broadcast
  // (the step is a few microseconds at batch 1). Same guarantee as a barrier: nobody starts
  // step s + 1 (which overwrites the h buffer step s reads) before everyone finished step s.
  const bool counters = sync && !shuffle && !canonical_gru_ && nthr <= 8;
  // Waits spin for a bounded time, then yield, then sleep (ops/rnn/team_wait.h): a preempted peer
  // must not make the others burn their time slices. Counters are 32-bit (the futex word),
  // compared modulo 2^32.
  // Publishing "step s done" and waiting for the peers' are separate: the wait for step s - 1
  // happens inside step s (PeerWait), after the part of the GEMM that reads only the thread's
  // own units of h_prev when it has one row (batch 1), so a step's exchange overlaps work.
  struct WaitCtx {
    TeamWord* (*flag)(float*, int64_t, int);
    float* scratch;
    int64_t flags_off;
    int ithr, nthr;
    uint32_t done;
  };
  auto flag_of = [](float* sc, int64_t off, int t) {
    return reinterpret_cast<TeamWord*>(sc + off + t * kFlagFloats);
  };
  WaitCtx wctx{flag_of, scratch, flags_off_, ithr, nthr, 0};
  PeerWait peer_wait;
  if (counters) {
    peer_wait.ctx = &wctx;
    peer_wait.fn = [](void* c) {
      auto* w = static_cast<WaitCtx*>(c);
      const uint32_t done = w->done;
      if (done == 0) return;  // step 0 waits for nobody
      for (int t = 0; t < w->nthr; ++t) {
        if (t == w->ithr) continue;
        team_wait(*w->flag(w->scratch, w->flags_off, t),
                  [done](uint32_t v) { return static_cast<int32_t>(v - done) >= 0; });
      }
    };
  }
  for (int64_t s0 = 0; s0 < T; s0 += chunk_) {
    const int64_t s1 = std::min(T, s0 + chunk_);
    // Hoisted input projections of this chunk, for the thread's own block: no barrier needed
    // unless another thread will read them (shuffle).
    hoist(own, x, packed, scratch + xw_off_, s0, s1);
    if (shuffle) barrier->wait();
    for (int64_t s = s0; s < s1; ++s) {
      const ThreadPlan& p = shuffle ? plans_[(ithr + s) % nthr] : own;
      wctx.done = static_cast<uint32_t>(s);  // peers must have finished steps < s
      step(p, s, s0, s1, io, packed, scratch, sync ? barrier : nullptr, peer_wait);
      if (s + 1 < T && sync) {  // h of step s is read by all at s + 1
        if (counters)
          flag(ithr)->publish(static_cast<uint32_t>(s + 1));
        else
          barrier->wait();
      }
    }
  }
  const ThreadPlan& last = shuffle ? plans_[(ithr + T - 1) % nthr] : own;
  write_final(last, io, scratch + hb_off_ + (T & 1) * s_.num_directions * s_.batch * ldh_,
              scratch + cb_off_);
}

// ---- registration ----

Result<std::vector<TensorDesc>> infer_rnn(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(RnnSpec s, rnn_spec(ctx.node, ctx.inputs, ctx.num_outputs, ctx.where));
  return rnn_output_descs(s);
}

CostHint cost_rnn(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                  std::span<const TensorDesc* const> outputs) {
  CostHint c;
  const TensorDesc& w = *inputs[kRnnW];
  const TensorDesc& r = *inputs[kRnnR];
  const TensorDesc& y = *outputs[0];
  // Y is [T, D, B, H] or [B, T, D, H]: T*D*B*H elements either way.
  const double tdbh = static_cast<double>(y.numel());
  const double gh = static_cast<double>(w.shape[1]);  // G*H
  const double h = static_cast<double>(r.shape[2]), i = static_cast<double>(w.shape[2]);
  const double g = gh / std::max(1.0, h);
  c.flops = 2.0 * tdbh * g * (i + h) + tdbh * g * 10.0;  // GEMMs + gates
  for (const TensorDesc* d : inputs)
    if (d) c.bytes += static_cast<double>(d->bytes());
  for (const TensorDesc* d : outputs) c.bytes += static_cast<double>(d->bytes());
  return c;
}

template <RnnCellKind K>
std::unique_ptr<Kernel> make_rnn_kernel() {
  return std::make_unique<RnnSequenceKernel>(K);
}

}  // namespace

std::string rnn_kernel_description(const Kernel& k) {
  const auto* rnn = dynamic_cast<const RnnSequenceKernel*>(&k);
  if (!rnn) return "";
  return std::string(rnn->name()) + " " + rnn->schedule().to_string();
}

void register_rnn_ops(Registry& r) {
  r.add({"LSTM", infer_rnn, cost_rnn, false, {make_rnn_kernel<RnnCellKind::kLstm>}});
  r.add({"GRU", infer_rnn, cost_rnn, false, {make_rnn_kernel<RnnCellKind::kGru>}});
  r.add({"RNN", infer_rnn, cost_rnn, false, {make_rnn_kernel<RnnCellKind::kRnn>}});
}

}  // namespace graphi::ops
