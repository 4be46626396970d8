/* arch.h - facts about target architectures and the kernel families fusegen emits for them,
 * shared by check (to reject what cannot run) and plan (to size what will). */
#ifndef FUSEGEN_ARCH_H
#define FUSEGEN_ARCH_H
#include <stdbool.h>
#include <stddef.h>

#include "spec.h"

/* Most dynamic shared memory one block may opt into on this arch, in bytes. */
size_t fg_arch_smem_limit(fg_arch a);

/* The portable tensor-core family (cp.async + ldmatrix + mma.sync m16n8k16).
 * Allowed tile values; stages 2..5; m*n at most FG_ARCH_SM80_MAX_TILE_ELEMS (register budget). */
#define FG_ARCH_SM80_MAX_TILE_ELEMS FUSEGEN_REG_SM80_MAX_TILE_ELEMS
bool fg_arch_sm80_tile_m_ok(long m);   /* 32, 64, 128, 256 */
bool fg_arch_sm80_tile_n_ok(long n);   /* 32, 64, 128, 256 */
bool fg_arch_sm80_tile_k_ok(long k);   /* 32, 64 */
bool fg_arch_stages_ok(long s, bool hopper_only);   /* 2..5; 2..16 for a tile that is the Hopper family's alone */
/* Warps along M and N for a tile (each warp tile a multiple of 16x16). */
void fg_arch_sm80_warps(long m, long n, int *warps_m, int *warps_n);
/* Shared memory the mainloop + epilogue of a tile needs, in bytes, for 16-bit operands. */
size_t fg_arch_sm80_smem_bytes(long m, long n, long k, long stages);   /* either B layout */
size_t fg_arch_sm80_layout_smem_bytes(long m, long n, long k, long stages, bool b_kn);

/* The Hopper family (TMA + wgmma, a producer and two consumer warpgroups; sm_90a only) has two
 * schedules: cooperative (tile m 128, one consumer warpgroup per 64 rows of every tile; or tile
 * m 64, named, the warpgroups splitting the columns: n 128, 256 or 320) and ping-pong (each
 * consumer warpgroup owns every other tile: tile m 64, or m 128 with n <= 128, so that a
 * warpgroup keeps at most 64x256 accumulators); n 64, 128, 160 or 256, k 64 (one 128-byte
 * swizzle row). A tile's schedule: "schedule", or by m when "auto". */
bool fg_arch_sm90_pingpong(long m, fg_schedule s);
/* A cooperative 64-row tile: its two consumer warpgroups split the columns (GemmSm90's COL_SPLIT). */
bool fg_arch_sm90_col_split(long m, bool pingpong);
bool fg_arch_sm90_tile_ok(long m, long n, long k, bool pingpong);
/* Whether only the Hopper family builds a tile: it names a schedule, or its n (160, 320) has no
 * portable kernel. */
bool fg_arch_sm90_only(long n, fg_schedule s);
/* Whether the Hopper family reads B in this layout for a tile of n columns: "nk" always; "kn"
 * (B [K, N], brought in blocks of 64 columns and multiplied N-major) for n 64, 128 or 256. */
bool fg_arch_sm90_b_layout_ok(fg_layout layout, long n);
/* Bytes a row of one block of a Hopper tile buffer (one TMA box of the epilogue) spans: 128,
 * or 64 where a tile row of n elements of out_bytes is not whole 128-byte blocks (n 160 of a
 * 16-bit type). The box's swizzle is of that width. Mirrors Epilogue::kTileRowBytes. */
int fg_arch_sm90_epilogue_row_bytes(long n, int out_bytes);
/* Tiles a Hopper CTA holds in their epilogue at once: 2 for ping-pong, else 1; each has its
 * own tile buffer, bias and scratch. */
int fg_arch_sm90_epilogue_buffers(bool pingpong);
/* Whether the Hopper family builds a tile: its shape, and its shared memory without staged
 * inputs fitting sm_90a (a cluster variant needs room for its exchange too: the planner checks
 * that). B's layout is the caller's to check (fg_arch_sm90_b_layout_ok). */
bool fg_arch_sm90_builds(long m, long n, long k, long stages, bool pingpong);
/* Dynamic shared memory of a Hopper GEMM kernel; cluster_ranks: the most CTAs of a cluster
 * variant's clusters (its exchange slots hold a row partial of each), 0 for other variants. */
size_t fg_arch_sm90_smem_bytes(long m, long n, long stages, bool pingpong, int cluster_ranks, size_t staged_inputs);
/* Bytes a Hopper CTA stages in shared memory for its epilogues: the tile buffers (residual in,
 * outputs out; ring_blocks > 0: that many of the tile's column blocks, a ring that the outputs
 * go out through block by block) and the biases. */
size_t fg_arch_sm90_staged_inputs_bytes(long m, long n, int out_bytes, bool tile, bool bias, bool pingpong,
                                        int ring_blocks);

#endif
