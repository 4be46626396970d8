/* registry_dump.c - prints the registry (runtime/fusegen_registry.h) and the generator's input
 * limits one fact a line, for check_registry.py to compare with what cannot include the header:
 * the Python bindings' constants and the JSON schema's enums. */
#include <stdio.h>

#include "fusegen_registry.h"
#include "spec.h"

int main(void)
{
#define DTYPE(id, word, value, bytes) printf("dtype %s %s %d %d\n", #id, word, value, bytes);
    FUSEGEN_REG_DTYPES(DTYPE)
#define LAYOUT(id, word, value) printf("layout %s %s %d\n", #id, word, value);
    FUSEGEN_REG_LAYOUTS(LAYOUT)
#define ARCH(id, word, sm, smem) printf("arch %s %s %d %d\n", #id, word, sm, smem);
    FUSEGEN_REG_ARCHS(ARCH)
#define OP(id, token, word, value, cls, key, dflt) \
    printf("op %s %s %s %d %d %s %.17g\n", #id, token, word, value, cls, key[0] ? key : "-", dflt);
    FUSEGEN_REG_OPS(OP)
#define NORM(id, word, value) printf("norm %s %s %d\n", #id, word, value);
    FUSEGEN_REG_NORMS(NORM)
#define STRATEGY(id, public_id, word, value) printf("strategy %s %s %s %d\n", #id, #public_id, word, value);
    FUSEGEN_REG_STRATEGIES(STRATEGY)
#define SCHEDULE(id, public_id, word, value) printf("schedule %s %s %s %d\n", #id, #public_id, word, value);
    FUSEGEN_REG_SCHEDULES(SCHEDULE)
#define FAMILY(id, word, value) printf("family %s %s %d\n", #id, word, value);
    FUSEGEN_REG_FAMILIES(FAMILY)
#define TILE_M(v) printf("tile_m %d\n", v);
#define TILE_N(v) printf("tile_n %d\n", v);
#define TILE_N90(v) printf("tile_n_sm90 %d\n", v);
#define TILE_K(v) printf("tile_k %d\n", v);
    FUSEGEN_REG_TILE_M(TILE_M)
    FUSEGEN_REG_TILE_N(TILE_N)
    FUSEGEN_REG_SM90_ONLY_TILE_N(TILE_N90)
    FUSEGEN_REG_TILE_K(TILE_K)
    printf("limit min_stages %d\n", FUSEGEN_REG_MIN_STAGES);
    printf("limit max_stages %d\n", FUSEGEN_REG_MAX_STAGES);
    printf("limit sm90_max_stages %d\n", FUSEGEN_REG_SM90_MAX_STAGES);
    printf("limit max_stores %d\n", FUSEGEN_REG_MAX_STORES);
    printf("limit max_kernels %d\n", FG_SPEC_MAX_KERNELS);
    printf("limit max_tiles %d\n", FG_SPEC_MAX_TILES);
    printf("limit max_ops %d\n", FG_SPEC_MAX_OPS);
    printf("limit max_archs %d\n", FG_SPEC_MAX_ARCHS);
    printf("limit max_name %d\n", FG_SPEC_MAX_NAME);
    return 0;
}
