/* fusegen_workspace.h - the layout of a kernel's workspace, shared by the runtime (which sizes
 * and checks it) and the generated launchers (which carve it). Offsets are 256-byte aligned.
 *   prenorm  f32 [M, N]                 split strategy: GEMM1 values before the norm (bf16
 *                                        outputs keep bf16 in its first half: deviations from
 *                                        the tile mean for LayerNorm, the values for RMSNorm)
 *   stats    f32x2 [M, ceil(N/tile_n)]  split strategy: per-row partial (mean, M2) of each N tile
 *   hidden   out dtype [M, N]           chains: GEMM1's result, GEMM2's A operand */
#ifndef FUSEGEN_WORKSPACE_H
#define FUSEGEN_WORKSPACE_H
#include <stddef.h>
#include <stdint.h>

typedef struct fusegen_ws_layout {
    size_t prenorm, stats, hidden;   /* byte offsets (meaningful when the part exists) */
    size_t total;                    /* bytes needed; 0 when the kernel needs none */
} fusegen_ws_layout;

static inline size_t fusegen_ws_align(size_t x) { return (x + 255u) & ~(size_t)255u; }

/* Caller guarantees m, n, tile_n > 0 and that the sizes do not overflow (the runtime checks
 * m * n against its limits before calling). */
static inline fusegen_ws_layout fusegen_ws_layout_for(int split, int64_t tile_n, int chain,
                                                      size_t out_elem_bytes, int64_t m, int64_t n)
{
    fusegen_ws_layout l = {0, 0, 0, 0};
    size_t at = 0;
    if (split) {
        int64_t tiles_n = (n + tile_n - 1) / tile_n;
        l.prenorm = at; at = fusegen_ws_align(at + (size_t)m * (size_t)n * 4u);
        l.stats = at;   at = fusegen_ws_align(at + (size_t)m * (size_t)tiles_n * 8u);
    }
    if (chain) {
        l.hidden = at;  at = fusegen_ws_align(at + (size_t)m * (size_t)n * out_elem_bytes);
    }
    l.total = at;
    return l;
}

#endif
