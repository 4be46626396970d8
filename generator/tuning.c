/* tuning.c - see tuning.h. */
#include "tuning.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonpos.h"

#define FG_TUNING_VERSION 1

/* The file's text, for the spelling of numbers (cJSON keeps only their values). */
typedef struct tuning_text {
    const char *text;
    size_t len;
} tuning_text;

/* Whether v, at pointer ptr of the text, is an integer in [lo, hi] written without a fraction or
 * exponent (as the runtime's reader of tuning files requires); sets *out. */
static int tuning__int(const tuning_text *tt, const char *ptr, const cJSON *v, long long lo, long long hi,
                       long long *out)
{
    size_t off;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return 0;
    if (ptr && fg_jsonpos_find(tt->text, tt->len, ptr, &off) == 0)
        for (; off < tt->len && strchr("-+0123456789.eE", tt->text[off]); off++)
            if (tt->text[off] == '.' || tt->text[off] == 'e' || tt->text[off] == 'E') return 0;
    *out = (long long)v->valuedouble;
    return 1;
}

static int tuning__time(const cJSON *v, double *out)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0) return 0;
    *out = v->valuedouble;
    return 1;
}

static int tuning__entry_cmp(const void *pa, const void *pb)
{
    const fg_tuned_entry *a = pa, *b = pb;
    int c = strcmp(a->spec_kernel, b->spec_kernel);
    if (c != 0) return c;
    if (a->m_bucket != b->m_bucket) return a->m_bucket < b->m_bucket ? -1 : 1;
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    if (a->k != b->k) return a->k < b->k ? -1 : 1;
    if (a->n2 != b->n2) return a->n2 < b->n2 ? -1 : 1;
    return 0;
}

static int tuning__device_cmp(const fg_tuned_device *a, const fg_tuned_device *b)
{
    int c = strcmp(a->name, b->name);
    if (c != 0) return c;
    if (a->sms != b->sms) return a->sms < b->sms ? -1 : 1;
    if (a->cc != b->cc) return a->cc < b->cc ? -1 : 1;
    return 0;
}

/* The variant of plan named name, when it is one of spec kernel kernel's; else NULL. */
static const fg_plan_kernel *tuning__variant(const fg_plan *plan, const char *kernel, const char *name)
{
    for (size_t i = 0; i < plan->n_kernels; i++) {
        const fg_plan_kernel *pk = &plan->kernels[i];
        if (pk->name && strcmp(pk->name, name) == 0)
            return pk->spec && pk->spec->name && strcmp(pk->spec->name, kernel) == 0 ? pk : NULL;
    }
    return NULL;
}

static int tuning__has_kernel(const fg_plan *plan, const char *kernel)
{
    for (size_t i = 0; i < plan->n_kernels; i++)
        if (plan->kernels[i].spec && plan->kernels[i].spec->name && strcmp(plan->kernels[i].spec->name, kernel) == 0)
            return 1;
    return 0;
}

/* A syntax error: where cJSON stopped (or the walk of the text found the fault first). */
static void tuning__syntax(fg_diag *d, const char *text, size_t len, const char *end)
{
    size_t off = end && end >= text ? (size_t)(end - text) : len, stop = len;
    int line, col;
    if (off > len) off = len;
    if (fg_jsonpos_walk(text, len, -1, NULL, NULL, &stop) != 0 && stop < off) off = stop;
    fg_jsonpos_line_col(text, len, off, &line, &col);
    const char *expected = fg_jsonpos_expected(text, len, off);
    if (off >= len)
        fg_diag_error_at(d, line, col, NULL, "syntax error: unexpected end of file%s%s%s", expected ? " (expected " : "",
                         expected ? expected : "", expected ? ")" : "");
    else
        fg_diag_error_at(d, line, col, NULL, "syntax error: not valid JSON%s%s%s", expected ? " (expected " : "",
                         expected ? expected : "", expected ? ")" : "");
}

/* Checks one entry (at pointer ptr) against plan; fills *e. Returns 0, or -1 after reporting. */
static int tuning__entry(fg_arena *a, const tuning_text *tt, const cJSON *item, const char *ptr, const fg_plan *plan,
                         fg_tuned_entry *e, fg_diag *d)
{
    static const char *const required[] = {"spec_kernel", "m_bucket", "n", "k", "n2", "winner", "winner_ms"};
    const cJSON *v;
    int errors = 0;
    memset(e, 0, sizeof *e);
    e->runner_up_ms = -1;
    if (!cJSON_IsObject(item)) {
        fg_diag_error(d, ptr, "an entry must be an object");
        return -1;
    }
    for (size_t r = 0; r < sizeof required / sizeof required[0]; r++)
        if (!cJSON_GetObjectItemCaseSensitive(item, required[r])) {
            fg_diag_error(d, ptr, "the entry has no \"%s\"", required[r]);
            errors++;
        }
    if (errors) return -1;
    v = cJSON_GetObjectItemCaseSensitive(item, "spec_kernel");
    if (!cJSON_IsString(v)) {
        fg_diag_error(d, fg_arena_printf(a, "%s/spec_kernel", ptr), "must be a string (a kernel name of the spec)");
        errors++;
    } else if (!tuning__has_kernel(plan, v->valuestring)) {
        fg_diag_error(d, fg_arena_printf(a, "%s/spec_kernel", ptr), "'%s' is not a kernel of library '%s'",
                      v->valuestring, plan->spec->library);
        errors++;
    } else {
        e->spec_kernel = fg_arena_strdup(a, v->valuestring);
    }
    if (!tuning__int(tt, fg_arena_printf(a, "%s/m_bucket", ptr), cJSON_GetObjectItemCaseSensitive(item, "m_bucket"), 1,
                     1LL << 31, &e->m_bucket) ||
        (e->m_bucket & (e->m_bucket - 1)) != 0) {
        fg_diag_error(d, fg_arena_printf(a, "%s/m_bucket", ptr), "must be a power of two from 1 to 2^31");
        errors++;
    }
    if (!tuning__int(tt, fg_arena_printf(a, "%s/n", ptr), cJSON_GetObjectItemCaseSensitive(item, "n"), 1,
                     2147483647, &e->n)) {
        fg_diag_error(d, fg_arena_printf(a, "%s/n", ptr), "must be an integer from 1 to 2^31 - 1");
        errors++;
    }
    if (!tuning__int(tt, fg_arena_printf(a, "%s/k", ptr), cJSON_GetObjectItemCaseSensitive(item, "k"), 1,
                     2147483647, &e->k)) {
        fg_diag_error(d, fg_arena_printf(a, "%s/k", ptr), "must be an integer from 1 to 2^31 - 1");
        errors++;
    }
    if (!tuning__int(tt, fg_arena_printf(a, "%s/n2", ptr), cJSON_GetObjectItemCaseSensitive(item, "n2"), 0,
                     2147483647, &e->n2)) {
        fg_diag_error(d, fg_arena_printf(a, "%s/n2", ptr), "must be an integer from 0 to 2^31 - 1 (0: not a chain)");
        errors++;
    }
    if (!tuning__time(cJSON_GetObjectItemCaseSensitive(item, "winner_ms"), &e->winner_ms)) {
        fg_diag_error(d, fg_arena_printf(a, "%s/winner_ms", ptr), "must be a time in milliseconds (a number, 0 or more)");
        errors++;
    }
    v = cJSON_GetObjectItemCaseSensitive(item, "runner_up_ms");
    if (v && !cJSON_IsNull(v) && !tuning__time(v, &e->runner_up_ms)) {
        fg_diag_error(d, fg_arena_printf(a, "%s/runner_up_ms", ptr),
                      "must be a time in milliseconds (a number, 0 or more) or null");
        errors++;
    }
    static const char *const names[] = {"winner", "runner_up"};
    for (int w = 0; w < 2; w++) {
        v = cJSON_GetObjectItemCaseSensitive(item, names[w]);
        if (w == 1 && (!v || cJSON_IsNull(v))) continue;
        const char *at = fg_arena_printf(a, "%s/%s", ptr, names[w]);
        if (!cJSON_IsString(v)) {
            fg_diag_error(d, at, "must be a string (a variant name)%s", w ? " or null" : "");
            errors++;
        } else if (e->spec_kernel && !tuning__variant(plan, e->spec_kernel, v->valuestring)) {
            fg_diag_error(d, at, "'%s' is not a variant of kernel '%s' that library '%s' plans (fusegen list names "
                          "them)", v->valuestring, e->spec_kernel, plan->spec->library);
            errors++;
        } else if (w == 0) {
            e->winner = fg_arena_strdup(a, v->valuestring);
        }
    }
    return errors ? -1 : 0;
}

int fg_tuning_add(fg_arena *a, const char *path, const char *text, size_t len, const fg_plan *const *plans,
                  size_t n_plans, fg_tuning *tunings, fg_diag *d)
{
    const char *end = NULL;
    int before = fg_diag_errors(d);
    fg_diag_set_source(d, path, text, len);
    const char *nul = len ? memchr(text, '\0', len) : NULL;
    if (nul) {
        int line, col;
        fg_jsonpos_line_col(text, len, (size_t)(nul - text), &line, &col);
        fg_diag_error_at(d, line, col, NULL, "a NUL byte in the file");
        return -1;
    }
    /* cJSON reads up to a NUL: a terminated copy, the caller's bytes being exactly len */
    text = fg_arena_strndup(a, text, len);
    if (!text) {
        fg_diag_error(d, NULL, "out of memory");
        return -1;
    }
    const tuning_text tt = {text, len};
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        tuning__syntax(d, text, len, end);
        return -1;
    }
    fg_tuned_device dev = {.path = path};
    const fg_plan *plan = NULL;
    size_t which = 0;
    const cJSON *version, *device, *library, *entries, *v;
    long long ver;
    if (!cJSON_IsObject(root)) {
        fg_diag_error(d, "", "a tuning file is a JSON object");
        goto done;
    }
    version = cJSON_GetObjectItemCaseSensitive(root, "fusegen_tuning");
    if (!version) {
        fg_diag_error(d, "", "no \"fusegen_tuning\" version: not a tuning file");
        goto done;
    }
    if (!tuning__int(&tt, "/fusegen_tuning", version, 1, 2147483647, &ver)) {
        fg_diag_error(d, "/fusegen_tuning", "must be a positive integer (the format's version)");
        goto done;
    }
    if (ver != FG_TUNING_VERSION) {
        fg_diag_error(d, "/fusegen_tuning", "version %lld; this generator reads version %d", ver, FG_TUNING_VERSION);
        goto done;
    }
    device = cJSON_GetObjectItemCaseSensitive(root, "device");
    if (!cJSON_IsObject(device)) {
        fg_diag_error(d, device ? "/device" : "", "%s", device ? "must be an object with \"name\", \"sms\" and \"cc\""
                                                               : "no \"device\"");
    } else {
        v = cJSON_GetObjectItemCaseSensitive(device, "name");
        if (!cJSON_IsString(v) || !*v->valuestring)
            fg_diag_error(d, v ? "/device/name" : "/device", "%s",
                          v ? "must be a non-empty string (the CUDA device name)" : "no \"name\"");
        else
            dev.name = fg_arena_strdup(a, v->valuestring);
        v = cJSON_GetObjectItemCaseSensitive(device, "sms");
        if (!tuning__int(&tt, "/device/sms", v, 1, 65535, &dev.sms))
            fg_diag_error(d, v ? "/device/sms" : "/device", "%s",
                          v ? "must be an integer from 1 to 65535 (the SM count)" : "no \"sms\"");
        v = cJSON_GetObjectItemCaseSensitive(device, "cc");
        if (!tuning__int(&tt, "/device/cc", v, 1, 2147483647, &dev.cc))
            fg_diag_error(d, v ? "/device/cc" : "/device", "%s",
                          v ? "must be a positive integer (the compute capability x10, e.g. 90)" : "no \"cc\"");
    }
    library = cJSON_GetObjectItemCaseSensitive(root, "library");
    const cJSON *lib_name = cJSON_GetObjectItemCaseSensitive(library, "name");
    const cJSON *lib_hash = cJSON_GetObjectItemCaseSensitive(library, "spec_sha256");
    if (!cJSON_IsObject(library)) {
        fg_diag_error(d, library ? "/library" : "", "%s",
                      library ? "must be an object with \"name\" and \"spec_sha256\"" : "no \"library\"");
    } else if (!cJSON_IsString(lib_name)) {
        fg_diag_error(d, lib_name ? "/library/name" : "/library", "%s",
                      lib_name ? "must be a string (the library's name)" : "no \"name\"");
    } else if (!cJSON_IsString(lib_hash)) {
        fg_diag_error(d, lib_hash ? "/library/spec_sha256" : "/library", "%s",
                      lib_hash ? "must be a string (the spec's sha256)" : "no \"spec_sha256\"");
    } else {
        for (which = 0; which < n_plans; which++)
            if (plans[which]->spec && plans[which]->spec->library &&
                strcmp(plans[which]->spec->library, lib_name->valuestring) == 0)
                break;
        if (which == n_plans) {
            fg_diag_error(d, "/library/name", "the file was measured for library '%s', which no spec given defines",
                          lib_name->valuestring);
        } else if (strcmp(plans[which]->spec->sha256_hex, lib_hash->valuestring) != 0) {
            fg_diag_error(d, "/library/spec_sha256", "the file was measured for another spec of library '%s' (spec "
                          "sha256 %s); the spec given (%s) has sha256 %s", lib_name->valuestring,
                          lib_hash->valuestring, plans[which]->spec->path, plans[which]->spec->sha256_hex);
        } else {
            plan = plans[which];
        }
    }
    entries = cJSON_GetObjectItemCaseSensitive(root, "entries");
    if (!cJSON_IsArray(entries)) {
        fg_diag_error(d, entries ? "/entries" : "", "%s", entries ? "must be an array" : "no \"entries\"");
        goto done;
    }
    if (fg_diag_errors(d) != before || !plan) goto done;
    dev.n_entries = (size_t)cJSON_GetArraySize(entries);
    dev.entries = fg_arena_alloc(a, (dev.n_entries ? dev.n_entries : 1) * sizeof *dev.entries);
    size_t *order = malloc((dev.n_entries ? dev.n_entries : 1) * sizeof *order);
    if (!dev.entries || !order) {
        free(order);
        fg_diag_error(d, NULL, "out of memory");
        goto done;
    }
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, entries)
    {
        (void)tuning__entry(a, &tt, item, fg_arena_printf(a, "/entries/%zu", i), plan, &dev.entries[i], d);
        order[i] = i;
        i++;
    }
    if (fg_diag_errors(d) == before) {
        /* sorted by key, then by position, so the duplicate reported is the later one */
        for (size_t x = 1; x < dev.n_entries; x++)
            for (size_t y = x; y > 0; y--) {
                const fg_tuned_entry *p = &dev.entries[order[y - 1]], *q = &dev.entries[order[y]];
                int c = tuning__entry_cmp(p, q);
                if (c < 0 || (c == 0 && order[y - 1] < order[y])) break;
                size_t t = order[y - 1];
                order[y - 1] = order[y];
                order[y] = t;
            }
        for (size_t x = 1; x < dev.n_entries; x++)
            if (tuning__entry_cmp(&dev.entries[order[x - 1]], &dev.entries[order[x]]) == 0) {
                const fg_tuned_entry *e = &dev.entries[order[x]];
                fg_diag_error(d, fg_arena_printf(a, "/entries/%zu", order[x]),
                              "a second entry for kernel '%s' at m_bucket %lld, n %lld, k %lld, n2 %lld", e->spec_kernel,
                              e->m_bucket, e->n, e->k, e->n2);
                fg_diag_note(d, fg_arena_printf(a, "/entries/%zu", order[x - 1]), "the first is here");
            }
    }
    if (fg_diag_errors(d) == before) {
        fg_tuned_entry *sorted = fg_arena_alloc(a, (dev.n_entries ? dev.n_entries : 1) * sizeof *sorted);
        if (!sorted) {
            fg_diag_error(d, NULL, "out of memory");
        } else {
            for (size_t x = 0; x < dev.n_entries; x++) sorted[x] = dev.entries[order[x]];
            dev.entries = sorted;
        }
    }
    free(order);
    if (fg_diag_errors(d) != before) goto done;

    /* one file per device and library; the devices kept sorted */
    fg_tuning *t = &tunings[which];
    size_t at = 0;
    for (; at < t->n_devices; at++) {
        int c = tuning__device_cmp(&t->devices[at], &dev);
        if (c == 0) {
            fg_diag_error(d, "/device", "a second tuning file for library '%s' on device %s (%lld SMs, cc %lld): "
                          "%s is one too; give one file per device", plan->spec->library, dev.name, dev.sms, dev.cc,
                          t->devices[at].path);
            goto done;
        }
        if (c > 0) break;
    }
    fg_tuned_device *grown = fg_arena_alloc(a, (t->n_devices + 1) * sizeof *grown);
    if (!grown) {
        fg_diag_error(d, NULL, "out of memory");
        goto done;
    }
    if (at) memcpy(grown, t->devices, at * sizeof *grown);
    grown[at] = dev;
    if (t->n_devices > at) memcpy(grown + at + 1, t->devices + at, (t->n_devices - at) * sizeof *grown);
    t->devices = grown;
    t->n_devices++;
done:
    cJSON_Delete(root);
    return fg_diag_errors(d) == before ? 0 : -1;
}
