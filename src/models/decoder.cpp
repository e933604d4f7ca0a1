#include "models/decoder.h"

#include <algorithm>

#include "core/error.h"
#include "ops/activation.h"
#include "ops/embedding.h"
#include "ops/matmul.h"

namespace keel::models {

DecoderModel::DecoderModel(Backend& be, DecoderSpec spec, std::vector<DecoderLayer> layers)
    : be_(be), spec_(std::move(spec)), layers_(std::move(layers)) {
  for (const DecoderLayer& l : layers_)
    for (const Residual& r : l.parts) {
      ++n_parts_;
      recurrent_ = recurrent_ || r.block->recurrent();
    }
}

int64_t DecoderModel::state_bytes(int64_t, int64_t capacity) const {
  int64_t bytes = 0;
  for (const DecoderLayer& l : layers_)
    for (const Residual& r : l.parts) bytes += r.block->cache_bytes(capacity);
  return bytes;
}

std::unique_ptr<SequenceState> DecoderModel::new_state(int64_t capacity) {
  if (capacity < 1)
    throw_error(ErrorCode::invalid_argument, "new_state: capacity {} (must be ≥ 1)", capacity);
  auto state = std::make_unique<DecoderState>();
  state->capacity_ = capacity;
  state->caches.resize(n_parts_);
  size_t slot = 0;
  for (const DecoderLayer& l : layers_)
    for (const Residual& r : l.parts) {
      r.block->init_cache(state->caches[slot++], capacity, be_);
      state->bytes_ += r.block->cache_bytes(capacity);
    }
  return state;
}

// The bytes of `from` into `to` (same shape, contiguous), on the backend's stream; nothing when the part has
// no such tensor.
void DecoderModel::copy_contents(const Tensor& from, Tensor& to) {
  if (from.defined()) be_.copy(from, to);
}

std::unique_ptr<SequenceState> DecoderModel::copy_state(const SequenceState& state, int64_t capacity) {
  const auto& src = dynamic_cast<const DecoderState&>(state);
  if (capacity == 0) capacity = src.capacity_;
  if (capacity < src.tokens_)
    throw_error(ErrorCode::invalid_argument, "copy_state: capacity {} < the state's {} tokens", capacity,
                src.tokens_);
  std::unique_ptr<SequenceState> copy = new_state(capacity);  // KV rows are the outer dimension
  auto& dst = static_cast<DecoderState&>(*copy);
  for (size_t i = 0; i < src.caches.size(); ++i) {
    const LayerCache& a = src.caches[i];
    LayerCache& b = dst.caches[i];
    if (a.k.defined() && src.tokens_ > 0) {  // KV rows past tokens() hold nothing
      Tensor k = b.k.slice(0, 0, src.tokens_), v = b.v.slice(0, 0, src.tokens_);
      be_.copy(a.k.slice(0, 0, src.tokens_), k);
      be_.copy(a.v.slice(0, 0, src.tokens_), v);
    }
    copy_contents(a.conv, b.conv);
    copy_contents(a.recurrent, b.recurrent);
  }
  dst.tokens_ = src.tokens_;
  return copy;
}

// Copies checkpoint `index`'s conv and recurrent states back into the state and drops the checkpoints after
// it (they hold tokens now forgotten); tokens() becomes the checkpoint's.
void DecoderModel::restore_to(DecoderState& st, size_t index) {
  const DecoderState::Checkpoint& c = st.checkpoints_[index];
  for (size_t i = 0; i < st.caches.size(); ++i) {
    copy_contents(c.conv[i], st.caches[i].conv);
    copy_contents(c.recurrent[i], st.caches[i].recurrent);
  }
  st.tokens_ = c.tokens;
  while (st.checkpoints_.size() > index + 1) {
    st.checkpoint_bytes_ -= st.checkpoints_.back().bytes;
    st.checkpoints_.pop_back();
  }
}

bool DecoderModel::truncate_state(SequenceState& state, int64_t tokens) {
  auto& st = dynamic_cast<DecoderState&>(state);
  if (tokens < 0 || tokens > st.tokens_) return false;
  if (recurrent_ && tokens != st.tokens_) {
    auto c = std::find_if(st.checkpoints_.begin(), st.checkpoints_.end(),
                          [&](const DecoderState::Checkpoint& k) { return k.tokens == tokens; });
    if (c == st.checkpoints_.end()) return false;
    restore_to(st, static_cast<size_t>(c - st.checkpoints_.begin()));
  }
  st.tokens_ = tokens;
  return true;
}

bool DecoderModel::restore_checkpoint(SequenceState& state) {
  auto& st = dynamic_cast<DecoderState&>(state);
  if (st.checkpoints_.empty() || st.checkpoints_.back().tokens > st.tokens_) return false;
  restore_to(st, st.checkpoints_.size() - 1);
  return true;
}

bool DecoderModel::checkpoint_state(SequenceState& state) {
  if (!recurrent_) return false;
  auto& st = dynamic_cast<DecoderState&>(state);
  if (!st.checkpoints_.empty() && st.checkpoints_.back().tokens == st.tokens_) return true;
  DecoderState::Checkpoint c;
  c.tokens = st.tokens_;
  c.conv.resize(st.caches.size());
  c.recurrent.resize(st.caches.size());
  auto copy = [&](const Tensor& from, Tensor& to) {
    if (!from.defined()) return;
    to = Tensor::empty(be_.pool(), from.dtype(), from.shape().data(), from.ndim(), "state checkpoint");
    copy_contents(from, to);
    c.bytes += from.nbytes();
  };
  for (size_t i = 0; i < st.caches.size(); ++i) {
    copy(st.caches[i].conv, c.conv[i]);
    copy(st.caches[i].recurrent, c.recurrent[i]);
  }
  st.checkpoint_bytes_ += c.bytes;
  st.checkpoints_.push_back(std::move(c));
  if (st.checkpoints_.size() > kMaxCheckpoints) {
    st.checkpoint_bytes_ -= st.checkpoints_.front().bytes;
    st.checkpoints_.erase(st.checkpoints_.begin());
  }
  return true;
}

int64_t DecoderModel::truncation_point(const SequenceState& state, int64_t tokens) const {
  const auto& st = dynamic_cast<const DecoderState&>(state);
  if (tokens >= st.tokens_) return st.tokens_;
  if (!recurrent_) return std::max<int64_t>(tokens, 0);
  int64_t best = 0;
  for (const DecoderState::Checkpoint& c : st.checkpoints_)
    if (c.tokens <= tokens) best = c.tokens;
  return best;
}

int64_t DecoderModel::drop_checkpoints(SequenceState& state) {
  auto& st = dynamic_cast<DecoderState&>(state);
  const int64_t freed = st.checkpoint_bytes_;
  st.checkpoints_.clear();
  st.checkpoint_bytes_ = 0;
  return freed;
}

// The allocations below mirror forward() one for one.
int64_t DecoderModel::step_transient_bytes(std::span<const StepShapeItem> step) const {
  StepShape s;
  s.be = &be_;
  int64_t L = 0;
  for (const StepShapeItem& it : step) {
    s.T += it.n_tokens;
    s.item_tokens.push_back(it.n_tokens);
    L += it.n_logits;
  }
  const int64_t hidden = f32_bytes(s.T * spec_.hidden);
  MemPlan m;
  m.alloc(4 * s.T);  // token ids
  m.alloc(hidden);
  m.free(4 * s.T);
  const int64_t rope = spec_.rope ? 4 * s.T + spec_.rope->table_bytes(s.T) : 0;  // positions + table
  m.alloc(rope);
  for (const DecoderLayer& l : layers_)
    for (const Residual& r : l.parts) m.workspace(2 * hidden + r.block->transient_bytes(s));  // normed, out
  m.free(rope);
  if (L > 0) {
    m.alloc(f32_bytes(L * spec_.hidden));
    m.free(hidden);
    m.alloc(f32_bytes(L * spec_.vocab));
    m.workspace(ops::matmul_workspace_bytes(be_, L, spec_.hidden, spec_.vocab, spec_.lm_head));
  }
  return m.peak();
}

Tensor DecoderModel::forward(std::span<const StepItem> step) {
  MemoryPool& pool = be_.pool();
  StepContext ctx;
  ctx.be = &be_;
  int64_t L = 0;
  for (const StepItem& item : step) {
    auto* st = dynamic_cast<DecoderState*>(item.state);
    if (!st) throw_error(ErrorCode::internal, "{}: a step item without this model's state", spec_.model_type);
    const int64_t n = static_cast<int64_t>(item.tokens.size());
    if (n < 1 || item.n_logits < 0 || item.n_logits > n)
      throw_error(ErrorCode::invalid_argument, "{}: a step item of {} tokens asking for {} logits",
                  spec_.model_type, n, item.n_logits);
    if (st->tokens_ + n > st->capacity_)
      throw_error(ErrorCode::invalid_argument, "{}: {} + {} tokens exceed the sequence's capacity of {}",
                  spec_.model_type, st->tokens_, n, st->capacity_);
    ctx.items.push_back(ItemRows{ctx.T, n, st->tokens_, &st->caches});
    ctx.T += n;
    L += item.n_logits;
  }
  for (size_t i = 0; i < step.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (step[i].state == step[j].state)
        throw_error(ErrorCode::internal, "{}: one sequence twice in a step", spec_.model_type);
  const int64_t T = ctx.T, d = spec_.hidden;

  Tensor hidden = Tensor::empty(pool, DType::f32, {T, d}, "hidden states");
  {
    Tensor ids = Tensor::empty(pool, DType::i32, {T}, "token ids");
    std::vector<int32_t> host;  // the step's ids, checked on the host and uploaded once
    host.reserve(static_cast<size_t>(T));
    for (const StepItem& item : step) host.insert(host.end(), item.tokens.begin(), item.tokens.end());
    be_.upload(host.data(), 4 * T, ids);
    ops::embedding(be_, spec_.embed, ids, hidden, host);
  }
  Tensor positions;
  if (spec_.rope) {
    positions = Tensor::empty(pool, DType::i32, {T}, "token positions");
    std::vector<int32_t> host(static_cast<size_t>(T));  // built on the host, then uploaded
    for (const ItemRows& it : ctx.items)
      for (int64_t j = 0; j < it.n; ++j)
        host[static_cast<size_t>(it.begin + j)] = static_cast<int32_t>(it.past + j);
    be_.upload(host.data(), 4 * T, positions);
    ctx.rope_table = Tensor::empty(pool, DType::f32, {T, spec_.rope->rotary_dim()}, "rope cos/sin table");
    spec_.rope->fill(be_, positions, ctx.rope_table, host);
  }
  if (observer_) observer_(0, hidden);

  size_t slot = 0;
  for (size_t l = 0; l < layers_.size(); ++l) {
    bool all_cancelled = !step.empty();
    for (const StepItem& item : step)
      all_cancelled = all_cancelled && item.cancelled && item.cancelled->load();
    if (all_cancelled)
      throw_error(ErrorCode::cancelled, "{}: step cancelled at layer {}", spec_.model_type, l);
    for (const Residual& r : layers_[l].parts) {
      Tensor normed = Tensor::empty(pool, DType::f32, {T, d}, "normed hidden states");
      ops::rms_norm(be_, hidden, r.norm, normed, spec_.norm);
      Tensor out = Tensor::empty(pool, DType::f32, {T, d}, "block output");
      r.block->forward(ctx, slot++, normed, out);
      normed = Tensor();
      ops::add(be_, hidden, out, hidden);
    }
    if (observer_) observer_(static_cast<int64_t>(l) + 1, hidden);
  }
  ctx.rope_table = Tensor();
  positions = Tensor();

  Tensor logits;
  if (L > 0) {
    // Each item's last n_logits rows, in item order.
    Tensor sel = Tensor::empty(pool, DType::f32, {L, d}, "logit rows");
    int64_t row = 0;
    for (size_t i = 0; i < step.size(); ++i) {
      const int64_t k = step[i].n_logits;
      const ItemRows& it = ctx.items[i];
      if (k == 0) continue;
      Tensor to = sel.slice(0, row, k);
      be_.copy(hidden.slice(0, it.begin + it.n - k, k), to);
      row += k;
    }
    hidden = Tensor();
    ops::rms_norm(be_, sel, spec_.final_norm, sel, spec_.norm);
    logits = Tensor::empty(pool, DType::f32, {L, spec_.vocab}, "logits");
    ops::matmul(be_, sel, spec_.lm_head, logits);
  } else {
    logits = Tensor::empty(pool, DType::f32, {0, spec_.vocab}, "logits");
  }
  // Every allocation of the step has succeeded: the states now hold these tokens.
  for (size_t i = 0; i < step.size(); ++i)
    static_cast<DecoderState*>(step[i].state)->tokens_ += ctx.items[i].n;
  be_.synchronize();  // the step ends: its kernels and copies are done when the logits are read
  return logits;
}

Backend* DecoderModel::sampling_backend() const {
  return &be_;
}

std::span<const float> DecoderModel::host_logits(const Tensor& logits, std::vector<float>& buffer) const {
  if (be_.host_addressable()) return Model::host_logits(logits, buffer);
  buffer.resize(static_cast<size_t>(logits.numel()));
  be_.download(logits, buffer.data(), 4 * logits.numel());
  return {buffer.data(), buffer.size()};
}

}  // namespace keel::models
