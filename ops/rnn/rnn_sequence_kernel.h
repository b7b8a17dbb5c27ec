// Internals of the LSTM/GRU/RNN sequence kernel shared by its files: the kernel class, its
// per-thread plans and the blocks of hidden units they own. rnn_spec.cpp checks the op's
// attributes and inputs, rnn_sequence_pack.cpp lays out strides, scratch and packed weights,
// rnn_sequence_schedule.cpp chooses the schedule and partition, rnn_sequence.cpp runs the step
// loops. Include only from ops/rnn/.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/kernel.h"
#include "ops/rnn/rnn_schedule.h"
#include "ops/rnn/rnn_sequence.h"
#include "ops/rnn/spin_barrier.h"
#include "ops/rnn/team_wait.h"
#include "ops/rnn/tiled_gemm.h"

namespace graphi::ops::rnn_wcs {

constexpr int64_t kLine = 16;  // floats per 64-byte cache line
// Scratch floats per team member's step counter (ops/rnn/team_wait.h: two cache lines).
constexpr int64_t kFlagFloats = sizeof(TeamWord) / sizeof(float);

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// The comma-separated names of a string attribute ("sigmoid, tanh"), blanks trimmed.
std::vector<std::string> split_names(const std::string& s);

// One block of hidden units [j0, j1) of direction d, its packed weights and its GEMMs.
struct Segment {
  int d = 0;
  int64_t j0 = 0, j1 = 0;
  // The block's columns of W and R, each a contiguous slab of the packed buffer in panel-major
  // order (TiledGemm; a thread streams dense blocks: a strided slice of a shared [K][cols]
  // matrix was ~13% slower) with panels of pw_* columns.
  int64_t wp_off = 0, pw_w = 16, rp0_off = 0, pw_r0 = 16, rp1_off = 0, pw_r1 = 16;
  // int8 weights: per-column scales and column sums (ops/rnn/gemm_int8.h) at aux_off, laid out
  // by RnnSequenceKernel::int8_aux; kb: this block's index among its direction's unit blocks
  // (the blocks h is quantized in).
  int64_t aux_off = 0, kb = 0;
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
    if (s_.training)
      return Status::unsupported("the training form runs on the training kernel (rnn_train.h)");
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
  bool bf16() const { return bf16_; }
  bool int8() const { return int8_; }

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
  // bf16 R of a segment (group 0): its k blocks in packing order, the own units first when
  // kblocked_ (else one block over all of h), each a packed operand of its own at `words`
  // from the segment's rp0_off.
  struct Bf16KBlock {
    int64_t k0, k1, words;
  };
  struct Bf16KBlocks {  // by value: the step loop allocates nothing
    Bf16KBlock b[3];
    int n = 0;
    int64_t words = 0;  // all blocks
    const Bf16KBlock* begin() const { return b; }
    const Bf16KBlock* end() const { return b + n; }
  };
  Bf16KBlocks bf16_kblocks(int64_t j0, int64_t j1, int64_t m, int64_t panel) const noexcept;
  // h rows * bf16 R group 0 of seg over its k blocks [i0, i1) (bf16_kblocks' order; past the
  // last: up to it): the first writes out unless `accumulate`, the others add to it.
  void recurrent_gemm_bf16_blocks(const Segment& seg, const float* packed, const float* h,
                                  float* out, int64_t rows, bool reverse, int i0, int i1,
                                  bool accumulate) const noexcept;
  // int8 weights: where a segment's scales and column sums sit in the packed buffer (floats from
  // the packed base; the column sums are int32). Group 0/1 of R: one column sum per k block.
  struct Int8Aux {
    int64_t w_scale, w_colsum, r_scale[2], r_colsum[2];
  };
  Int8Aux int8_aux(const Segment& seg) const;
  int64_t int8_aux_floats(const Segment& seg) const;
  // One int8 GEMM of a state row block: h rows (their u8 mirrors) over k block kb of direction
  // d times R group `group`; accumulates unless `first`.
  void recurrent_gemm_int8(const Segment& seg, int group, const float* packed, const float* h,
                           float* out, int64_t rows, int64_t kb, bool first,
                           bool reverse) const noexcept;
  // Word of a state row's u8 mirror holding the scale, zero point of the block starting at j0.
  int64_t int8_param_word(int64_t j0) const { return ldh_ / 2 + 2 * (j0 / kLine); }
  // `scratch` and `ithr`: the thread's bf16 / u8 copy of x (reduced-precision weights only).
  void hoist(const ThreadPlan& p, const float* x, const float* packed, float* xw, int64_t s0,
             int64_t s1, float* scratch, int ithr) const noexcept;
  // One hoisted GEMM call: n rows of x (stride I) times the segment's W columns into out.
  void hoist_rows(const Segment& seg, const float* packed, const float* x, float* out, int64_t n,
                  uint32_t* x16) const noexcept;
  // bf16 weights: the bf16 pair copy ("mirror", mirror_delta_ floats after it) of units
  // [j0, j1) of a state row (h or the canonical GRU's r * h) in scratch, which the GEMMs read.
  void to_mirror(float* row, int64_t j0, int64_t j1) const noexcept;
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
  bool bf16_ = false;  // s_.weights == kBf16: packed slabs hold bf16 pairs (ops/rnn/gemm_bf16.h)
  bool int8_ = false;  // s_.weights == kInt8: packed slabs hold s8 quads (ops/rnn/gemm_int8.h)
  bool lowp_ = false;  // bf16_ || int8_: x and h are converted copies ("mirrors")
  // int8: per direction, the unit blocks' bounds j0 of each block, then H (h is quantized per
  // row and block).
  std::vector<std::vector<int64_t>> kbounds_;
  RnnSchedule schedule_;
  RnnLayerShape shape_;
  bool canonical_gru_ = false;
  // R of each block (fp32, bf16) packed in k blocks at its own units (TiledGemm k_splits,
  // bf16_kblocks): set when every step runs own-units-first (one row per thread, per-thread
  // step counters, no zigzag).
  bool kblocked_ = false;
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
  // bf16: the state mirror's distance from the fp32 states (floats), the per-thread bf16 copies
  // of x rows (x16_per_thread_ words each, rows ldx16_ words apart), the hoisted GEMM's ldc.
  int64_t mirror_delta_ = 0, x16_off_ = 0, x16_per_thread_ = 0, ldx16_ = 0, hoist_ldc_ = 0;
  // Calibration copies only (rnn_sequence_schedule.cpp): a steady-clock deadline (ms, 0 = none).
  // Past it, run() stops at the next step (a shortened run on a loaded machine can take seconds
  // when a peer is preempted at every exchange) and sets calib_aborted_; the run's time is then
  // discarded. Only where the threads can stop apart without deadlock: no exchange, or the
  // per-step counters (the stopping thread publishes a step past the end).
  double calib_deadline_ms_ = 0;
  mutable std::atomic<bool> calib_aborted_{false};
};

}  // namespace graphi::ops::rnn_wcs
