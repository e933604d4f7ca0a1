import re, sys, collections
def kind(dso, sym):
    s = sym
    if 'kblocked' in s: return 'GEMM prefill: tile kernel (kblocked)'
    if 'matmul_cols_avx512' in s: return 'GEMM prefill: bf16->f32 panel widening (cols)'
    if 'matmul_tile::block' in s: return 'GEMV (T<8: decode, lm_head)'
    if 'slot_avx512' in s: return 'attention'
    if re.search(r'k_avx512_(heads|cb|decode)', s): return 'Mamba2 SSD scan'
    if 'conv1d' in s: return 'conv1d'
    if re.search(r'inv_rms|rms_norm|gated_rms|norm', s): return 'norms'
    if re.search(r'moe|route_', s): return 'MoE route/gather/scatter'
    if re.search(r'k_avx512_unary|softmax|binary|rope|__expf|__log1pf|__sincos|embedding|Argmax|sampl', s): return 'elementwise, rope, embedding, sampling'
    if re.search(r'__memmove|__memset|memcpy', s): return 'copies (memcpy/memset)'
    if dso == '[kernel.kallsyms]':
        if re.search(r'clear_page|page_fault|do_anonymous|handle_mm_fault|alloc_pages|alloc_frozen|get_page_from_freelist|folio|lruvec|memcg|mem_cgroup|charge|pte|rmap|mas_walk|list_del|__rcu', s): return 'kernel: page faults, zeroing, munmap'
        if re.search(r'unmap|free_|tlb|zap|release_pages|swap_cache', s): return 'kernel: page faults, zeroing, munmap'
        return 'kernel: scheduling, futex, irq, other'
    if re.search(r'futex|pthread|condvar|condition_variable|ThreadPool|lll_lock|_Function_handler<.*matmul', s): return 'thread pool (futex, locks, dispatch)'
    if re.search(r'malloc|free|operator new|operator delete|Allocation|_int_|memalign|unlink_chunk|MemoryPool|Sp_counted', s): return 'allocation (user side)'
    return 'other (model glue, fmt, checks)'
def load(path):
    d = collections.Counter()
    for line in open(path):
        m = re.match(r'\s*(\d+)\s+(\S+)\s+\[.\]\s+(.*?)\s*$', line)
        if m: d[kind(m.group(2), m.group(3))] += int(m.group(1))
    return d
