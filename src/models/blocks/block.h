// The blocks layer: each mechanism (attention, Mamba2, MLP, MoE, ...) once, reused by every model file. A
// block is one residual branch's body: it reads the pre-normed hidden states of the whole step [T, d] and
// writes its output [T, d]; the model adds it to the residual stream. Token-wise work (projections, norms,
// experts) runs over the step's concatenated tokens; sequence-wise work (attention over a sequence's KV,
// conv/SSM with its state) runs per item, on that item's rows and its LayerCache.
//
// Memory (specs/memory.md): a block allocates its intermediates from the backend's pool and frees them before
// it returns; `transient_bytes` states their peak as a closed form of the step's shape, replayed on a MemPlan
// in the same order as forward() allocates.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel::models {

// One block's persistent state inside a sequence. Attention: k, v [capacity, n_kv, head_dim] f32. Mamba2 and
// Gated DeltaNet: conv [K−1, conv_dim] f32 and recurrent (SSM [H, P, N] / DeltaNet [Hv, Dk, Dv]) f32, zeros
// for a new sequence. Stateless blocks leave all undefined.
struct LayerCache {
  Tensor k, v;
  Tensor conv, recurrent;
};

// One sequence's rows in the step: rows [begin, begin + n) of the concatenated tokens, at absolute positions
// past, past + 1, ...; caches: its LayerCache per block slot (owned by its sequence state).
struct ItemRows {
  int64_t begin = 0;
  int64_t n = 0;
  int64_t past = 0;
  std::vector<LayerCache>* caches = nullptr;
};

struct StepContext {
  Backend* be = nullptr;
  int64_t T = 0;                // tokens in the step
  std::vector<ItemRows> items;  // in step order; their rows tile [0, T)
  Tensor rope_table;            // [T, rotary_dim] cos ‖ sin per token (models with RoPE), else undefined
  MemoryPool& pool() const { return be->pool(); }
};

// The step's shape as the planner sees it.
struct StepShape {
  int64_t T = 0;
  std::vector<int64_t> item_tokens;  // n per item, in step order
  const Backend* be = nullptr;       // the backend that will run it: it states each op's workspace
};

// Replays allocations in forward()'s order to find their peak, in bytes.
class MemPlan {
 public:
  void alloc(int64_t bytes) {
    cur_ += bytes;
    peak_ = std::max(peak_, cur_);
  }
  void free(int64_t bytes) { cur_ -= bytes; }
  // An op's workspace, taken and released inside one call.
  void workspace(int64_t bytes) { peak_ = std::max(peak_, cur_ + bytes); }
  int64_t peak() const { return peak_; }
  int64_t current() const { return cur_; }

 private:
  int64_t cur_ = 0;
  int64_t peak_ = 0;
};

inline int64_t f32_bytes(int64_t n) {
  return 4 * n;
}

class Block {
 public:
  virtual ~Block() = default;
  // Persistent bytes of this block's LayerCache for a sequence of `capacity` tokens (what init_cache
  // allocates).
  virtual int64_t cache_bytes(int64_t capacity) const {
    (void)capacity;
    return 0;
  }
  // Allocates the cache from `be`'s pool (zeros, through `be`, where the recurrence needs them).
  virtual void init_cache(LayerCache& cache, int64_t capacity, Backend& be) const {
    (void)cache, (void)capacity, (void)be;
  }
  // x: f32 [T, d] normed input (read only); out: f32 [T, d], written. `slot` indexes each item's caches.
  virtual void forward(const StepContext& ctx, size_t slot, const Tensor& x, Tensor& out) const = 0;
  // Peak bytes forward() allocates (x and out excluded) for a step of this shape.
  virtual int64_t transient_bytes(const StepShape& s) const = 0;
  // True when forward() updates a recurrent cache in place (Mamba2, DeltaNet): a failed step then leaves the
  // sequence's state half-updated. Attention only writes KV rows past tokens(), which a retry overwrites.
  virtual bool recurrent() const { return false; }
};

}  // namespace keel::models
