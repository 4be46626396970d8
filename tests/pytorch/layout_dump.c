/* layout_dump.c - prints the offset and size of every field of the structs in fusegen.h, and
 * each struct's size and alignment, one per line: "<struct>.<field> <offset> <size>" and
 * "<struct> sizeof <size> align <align>". check_layout.py prints the same from the ctypes
 * declarations of integrations/pytorch/fusegen_torch and compares the two. */
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>

#include "fusegen.h"

#define F(type, field) \
    printf("%s.%s %zu %zu\n", #type, #field, offsetof(type, field), sizeof(((type *)0)->field))
#define S(type) printf("%s sizeof %zu align %zu\n", #type, sizeof(type), alignof(type))

int main(void)
{
    S(fusegen_op);
    F(fusegen_op, kind); F(fusegen_op, value); F(fusegen_op, affine); F(fusegen_op, index);

    S(fusegen_problem);
    F(fusegen_problem, m); F(fusegen_problem, n); F(fusegen_problem, k); F(fusegen_problem, n2);
    F(fusegen_problem, a); F(fusegen_problem, b); F(fusegen_problem, out);
    F(fusegen_problem, b_layout); F(fusegen_problem, b2_layout);
    F(fusegen_problem, epilogue); F(fusegen_problem, epilogue2); F(fusegen_problem, sm);
    F(fusegen_problem, lda); F(fusegen_problem, ldb); F(fusegen_problem, ldo); F(fusegen_problem, ldr);
    F(fusegen_problem, ld_store); F(fusegen_problem, ldb2); F(fusegen_problem, ldo2);

    S(fusegen_args);
    F(fusegen_args, a); F(fusegen_args, b); F(fusegen_args, out); F(fusegen_args, bias);
    F(fusegen_args, residual); F(fusegen_args, gamma); F(fusegen_args, beta); F(fusegen_args, store);
    F(fusegen_args, b2); F(fusegen_args, out2); F(fusegen_args, bias2); F(fusegen_args, residual2);
    F(fusegen_args, store2);

    S(fusegen_kernel);
    F(fusegen_kernel, name); F(fusegen_kernel, spec_kernel); F(fusegen_kernel, sm);
    F(fusegen_kernel, arch_specific); F(fusegen_kernel, family); F(fusegen_kernel, a); F(fusegen_kernel, b);
    F(fusegen_kernel, out); F(fusegen_kernel, b_layout); F(fusegen_kernel, epilogue);
    F(fusegen_kernel, ops); F(fusegen_kernel, n_ops); F(fusegen_kernel, chain);
    F(fusegen_kernel, b2_layout); F(fusegen_kernel, epilogue2); F(fusegen_kernel, ops2);
    F(fusegen_kernel, n_ops2); F(fusegen_kernel, tile_m); F(fusegen_kernel, tile_n);
    F(fusegen_kernel, tile_k); F(fusegen_kernel, stages); F(fusegen_kernel, threads);
    F(fusegen_kernel, tile2_m); F(fusegen_kernel, tile2_n); F(fusegen_kernel, tile2_k);
    F(fusegen_kernel, stages2); F(fusegen_kernel, threads2); F(fusegen_kernel, schedule);
    F(fusegen_kernel, schedule2); F(fusegen_kernel, norm);
    F(fusegen_kernel, strategy); F(fusegen_kernel, split_k); F(fusegen_kernel, max_n); F(fusegen_kernel, align_elems);
    F(fusegen_kernel, n_stores); F(fusegen_kernel, n_stores2); F(fusegen_kernel, uses_bias);
    F(fusegen_kernel, uses_residual); F(fusegen_kernel, uses_gamma); F(fusegen_kernel, uses_beta);
    F(fusegen_kernel, uses_bias2); F(fusegen_kernel, uses_residual2); F(fusegen_kernel, rank);
    F(fusegen_kernel, launch1); F(fusegen_kernel, launch2); F(fusegen_kernel, cache);
    F(fusegen_kernel, functions); F(fusegen_kernel, launch_jit); F(fusegen_kernel, jit);

    S(fusegen_launch_gemm);
    F(fusegen_launch_gemm, hopper); F(fusegen_launch_gemm, tile_m); F(fusegen_launch_gemm, tile_n);
    F(fusegen_launch_gemm, tile_k); F(fusegen_launch_gemm, threads); F(fusegen_launch_gemm, smem_bytes);
    F(fusegen_launch_gemm, split); F(fusegen_launch_gemm, split_k); F(fusegen_launch_gemm, split_k_row_smem);
    F(fusegen_launch_gemm, cluster); F(fusegen_launch_gemm, persistent); F(fusegen_launch_gemm, tma_box_a);
    F(fusegen_launch_gemm, tma_box_b); F(fusegen_launch_gemm, b_kn); F(fusegen_launch_gemm, dt_ab);
    F(fusegen_launch_gemm, dt_out); F(fusegen_launch_gemm, out_bytes); F(fusegen_launch_gemm, map_residual);
    F(fusegen_launch_gemm, map_store_slot); F(fusegen_launch_gemm, map_out); F(fusegen_launch_gemm, epi_box_bytes);

    S(fusegen_tuned_entry);
    F(fusegen_tuned_entry, spec_kernel); F(fusegen_tuned_entry, m_bucket); F(fusegen_tuned_entry, n);
    F(fusegen_tuned_entry, k); F(fusegen_tuned_entry, n2); F(fusegen_tuned_entry, winner);
    F(fusegen_tuned_entry, winner_ms); F(fusegen_tuned_entry, runner_up_ms);
    S(fusegen_tuned_device);
    F(fusegen_tuned_device, name); F(fusegen_tuned_device, sms); F(fusegen_tuned_device, cc);
    F(fusegen_tuned_device, entries); F(fusegen_tuned_device, n_entries);
    S(fusegen_library);
    F(fusegen_library, name); F(fusegen_library, generator_version); F(fusegen_library, spec_sha256);
    F(fusegen_library, kernels); F(fusegen_library, n_kernels); F(fusegen_library, tuned);
    F(fusegen_library, n_tuned);

    /* the enums travel as c_int */
    printf("enum fusegen_status sizeof %zu\n", sizeof(fusegen_status));
    printf("enum fusegen_dtype sizeof %zu\n", sizeof(fusegen_dtype));
    printf("enum fusegen_op_kind sizeof %zu\n", sizeof(fusegen_op_kind));
    printf("FUSEGEN_MAX_STORES %d\n", FUSEGEN_MAX_STORES);
    printf("FUSEGEN_OP_LAYERNORM %d\n", (int)FUSEGEN_OP_LAYERNORM);
    printf("FUSEGEN_STRATEGY_CLUSTER %d\n", (int)FUSEGEN_STRATEGY_CLUSTER);
    printf("FUSEGEN_ERR_CUDA %d\n", (int)FUSEGEN_ERR_CUDA);
    printf("FUSEGEN_DTYPE_BF16 %d\n", (int)FUSEGEN_DTYPE_BF16);
    printf("enum fusegen_family sizeof %zu\n", sizeof(fusegen_family));
    printf("FUSEGEN_FAMILY_HOPPER %d\n", (int)FUSEGEN_FAMILY_HOPPER);
    printf("enum fusegen_schedule sizeof %zu\n", sizeof(fusegen_schedule));
    printf("FUSEGEN_SCHEDULE_COOPERATIVE %d\n", (int)FUSEGEN_SCHEDULE_COOPERATIVE);
    printf("FUSEGEN_SCHEDULE_PINGPONG %d\n", (int)FUSEGEN_SCHEDULE_PINGPONG);
    return 0;
}
