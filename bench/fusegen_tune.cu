// fusegen-tune: times every eligible variant of a kernel library (the default one; with
// --library a generated library built as a shared object; with --spec a spec's kernels compiled
// by the JIT) on each problem of a problem list, on the present GPU, and writes a tuning file
// (docs/api.md, "Tuning files") that fusegen_tuning_load applies at run time and
// `fusegen generate --tuning` compiles in.
//
//   fusegen-tune [--library FILE.so [--symbol NAME] | --spec SPEC.json]
//                (--shapes FILE | --record FILE)... [-o OUT] [--warmup N] [--runs N] [--seed S]
//
// --library: lib<name>.so holds the table <name>_library (fusegen_add_library's <prefix>_shared,
//   as the PyTorch integration finds it); --symbol names another.
// --spec: the spec is checked first; its kernels are compiled for the device once one is found,
//   and only then are the problems read against them.
// --shapes: a JSON object of problem arrays (bench/shapes.json's form) or one array; a problem
//   is {"m", "n", "k"[, "n2"][, "spec_kernel"]}; without spec_kernel it goes to every spec kernel
//   of the library of its kind (a chain with n2, a single GEMM without).
// --record: a recording (FUSEGEN_RECORD, fusegen_record_open): one JSON object a line; lines of
//   another library are skipped.
// Each problem is timed at M = its bucket (the power of two at or above M), the M the tuning
// file's entry then serves. Per variant: --warmup runs, then the median of --runs runs, each
// between two CUDA events after an L2 scrub; inputs are random (never zero), filled afresh for
// every problem.
// OUT (default fusegen_tuning.json) is read first when it exists: it must be for this library
// and device, and the problems it holds are not measured again (an interrupted run resumes). It
// is rewritten (a temporary file, then renamed) after every problem.
// Exit status: 0 done, 1 a CUDA or run failure, 2 a bad command line or input, 77 no CUDA device.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cjson/cJSON.h>

#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fusegen.h"
#include "fusegen_default.h"
#include "fusegen_jit.h"

namespace {

[[noreturn]] void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fusegen-tune: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

// A bad command line or input file: exit 2 (before any GPU work, except for an existing OUT).
[[noreturn]] void bad_input(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fusegen-tune: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t ck_e_ = (call);                                                                \
        if (ck_e_ != cudaSuccess)                                                                  \
            die("%s:%d: %s: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorName(ck_e_),           \
                cudaGetErrorString(ck_e_));                                                        \
    } while (0)

// ---- problems ------------------------------------------------------------------------------------

struct Problem {
    std::string spec;        // spec kernel
    int64_t m_bucket, n, k, n2;
};

bool same_key(const Problem &a, const Problem &b)
{
    return a.spec == b.spec && a.m_bucket == b.m_bucket && a.n == b.n && a.k == b.k && a.n2 == b.n2;
}

bool key_less(const Problem &a, const Problem &b)
{
    if (a.spec != b.spec) return a.spec < b.spec;
    if (a.m_bucket != b.m_bucket) return a.m_bucket < b.m_bucket;
    if (a.n != b.n) return a.n < b.n;
    if (a.k != b.k) return a.k < b.k;
    return a.n2 < b.n2;
}

int64_t bucket_of(int64_t m)
{
    int64_t b = 1;
    while (b < m) b *= 2;
    return b;
}

struct Entry {
    Problem key;
    std::string winner, runner_up;
    double winner_ms = 0, runner_up_ms = -1;   // runner_up_ms < 0: none
};

const fusegen_library *g_library = &fusegen_default_library;
const fusegen_library &lib() { return *g_library; }

// --library FILE [--symbol NAME]: the table of a generated library built as a shared object.
// The handle stays open for the process (its kernels run until the end).
void load_library(const char *path, const char *symbol)
{
    std::string name = symbol ? symbol : "";
    if (name.empty()) {   // lib<name>.so... -> <name>_library
        std::string base = path;
        const size_t slash = base.rfind('/');
        if (slash != std::string::npos) base = base.substr(slash + 1);
        if (base.compare(0, 3, "lib") == 0) base = base.substr(3);
        base = base.substr(0, base.find('.'));
        if (base.empty()) bad_input("--library %s: no library name in the file name; give --symbol", path);
        name = base + "_library";
    }
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) bad_input("--library %s: cannot load it: %s", path, dlerror());
    void *table = dlsym(handle, name.c_str());
    if (!table) bad_input("--library %s: no symbol %s (give the table's name with --symbol)", path, name.c_str());
    g_library = static_cast<const fusegen_library *>(table);
    if (!g_library->name || !g_library->kernels || g_library->n_kernels == 0)
        bad_input("--library %s: %s is not a kernel library's table (no name or no kernels)", path, name.c_str());
}

// The first variant of a spec kernel (its dtypes, layouts and epilogue stand for all).
const fusegen_kernel *first_variant(const std::string &spec)
{
    for (size_t i = 0; i < lib().n_kernels; ++i)
        if (lib().kernels[i].spec_kernel && spec == lib().kernels[i].spec_kernel) return &lib().kernels[i];
    return nullptr;
}

std::vector<std::string> spec_kernels()
{
    std::vector<std::string> out;
    for (size_t i = 0; i < lib().n_kernels; ++i) {
        std::string s = lib().kernels[i].spec_kernel ? lib().kernels[i].spec_kernel : "";
        if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
    return out;
}

std::string read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) bad_input("cannot open %s: %s", path, strerror(errno));
    std::string text;
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, got);
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad) bad_input("reading %s failed", path);
    return text;
}

// --spec FILE: the spec's kernels, compiled by the JIT once a device is known (open_spec
// checks the spec alone: its errors are input errors). The JIT lives until the process ends.
fusegen_jit *open_spec(const char *path)
{
    const std::string text = read_text(path);
    fusegen_jit *jit = nullptr;
    const fusegen_status st = fusegen_jit_create(text.data(), text.size(), path, &jit);
    if (st != FUSEGEN_OK) bad_input("--spec %s: %s: %s", path, fusegen_status_name(st), fusegen_last_detail());
    return jit;
}

int64_t int_member(const cJSON *o, const char *key, int64_t fallback, const char *where)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return fallback;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 2147483647.0 ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        bad_input("%s: \"%s\" must be a non-negative integer", where, key);
    return (int64_t)v->valuedouble;
}

void add_problem(std::vector<Problem> &list, const std::string &spec, int64_t m, int64_t n, int64_t k, int64_t n2,
                 const char *where)
{
    const fusegen_kernel *first = first_variant(spec);
    if (!first) bad_input("%s: library %s has no spec kernel '%s'", where, lib().name, spec.c_str());
    if (m <= 0 || n <= 0 || k <= 0) bad_input("%s: m, n and k must be positive", where);
    if ((first->chain != 0) != (n2 > 0))
        bad_input("%s: spec kernel '%s' is %s; n2 must be %s", where, spec.c_str(), first->chain ? "a chain" : "a single GEMM",
            first->chain ? "given" : "0 or absent");
    Problem p{spec, bucket_of(m), n, k, n2};
    for (const Problem &q : list)
        if (same_key(p, q)) return;
    list.push_back(p);
}

void problem_from(std::vector<Problem> &list, const cJSON *o, const char *where)
{
    if (!cJSON_IsObject(o)) bad_input("%s: a problem must be an object", where);
    int64_t m = int_member(o, "m", 0, where), n = int_member(o, "n", 0, where), k = int_member(o, "k", 0, where);
    int64_t n2 = int_member(o, "n2", 0, where);
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec_kernel");
    if (spec) {
        if (!cJSON_IsString(spec)) bad_input("%s: \"spec_kernel\" must be a string", where);
        add_problem(list, spec->valuestring, m, n, k, n2, where);
        return;
    }
    for (const std::string &s : spec_kernels())
        if ((first_variant(s)->chain != 0) == (n2 > 0)) add_problem(list, s, m, n, k, n2, where);
}

void read_shapes(std::vector<Problem> &list, const char *path)
{
    std::string text = read_text(path);
    cJSON *root = cJSON_Parse(text.c_str());
    if (!root) bad_input("%s is not valid JSON", path);
    const cJSON *item;
    if (cJSON_IsArray(root)) {
        cJSON_ArrayForEach(item, root) problem_from(list, item, path);
    } else if (cJSON_IsObject(root)) {
        const cJSON *arr;
        cJSON_ArrayForEach(arr, root) {
            if (!cJSON_IsArray(arr)) continue;
            cJSON_ArrayForEach(item, arr) problem_from(list, item, path);
        }
    } else {
        bad_input("%s: a shapes file is an array of problems or an object of such arrays", path);
    }
    cJSON_Delete(root);
}

void read_record(std::vector<Problem> &list, const char *path)
{
    std::string text = read_text(path);
    size_t at = 0, line_no = 0, skipped = 0;
    while (at < text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(at, end - at);
        at = end + 1;
        ++line_no;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        char where[512];
        snprintf(where, sizeof where, "%s:%zu", path, line_no);
        cJSON *o = cJSON_Parse(line.c_str());
        if (!o || !cJSON_IsObject(o)) bad_input("%s: not a JSON object", where);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "library");
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec_kernel");
        if (!cJSON_IsString(name) || !cJSON_IsString(spec)) bad_input("%s: needs \"library\" and \"spec_kernel\"", where);
        if (strcmp(name->valuestring, lib().name) != 0) {
            ++skipped;
        } else {
            add_problem(list, spec->valuestring, int_member(o, "m", 0, where), int_member(o, "n", 0, where),
                        int_member(o, "k", 0, where), int_member(o, "n2", 0, where), where);
        }
        cJSON_Delete(o);
    }
    if (skipped) printf("%s: %zu line(s) of other libraries skipped\n", path, skipped);
}

// ---- the tuning file -----------------------------------------------------------------------------

struct Device {
    std::string name;
    int sms = 0, cc = 0;
};

Device current_device()
{
    int dev = 0, count = 0;
    cudaDeviceProp prop;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        fprintf(stderr, "fusegen-tune: no CUDA device\n");
        exit(77);
    }
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    Device d;
    d.name = prop.name;
    d.sms = prop.multiProcessorCount;
    d.cc = prop.major * 10 + prop.minor;
    return d;
}

// The entries of an existing OUT, which must be for this library and device.
std::vector<Entry> read_tuning(const char *path, const Device &dev)
{
    std::vector<Entry> out;
    FILE *probe = fopen(path, "rb");
    if (!probe) return out;
    fclose(probe);
    std::string text = read_text(path);
    cJSON *root = cJSON_Parse(text.c_str());
    if (!root || !cJSON_IsObject(root)) bad_input("%s exists but is not a tuning file (not a JSON object)", path);
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "fusegen_tuning");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "device");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(root, "library");
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(root, "entries");
    if (!cJSON_IsNumber(ver) || ver->valuedouble != 1 || !cJSON_IsObject(d) || !cJSON_IsObject(l) ||
        !cJSON_IsArray(entries))
        bad_input("%s exists but is not a version 1 tuning file", path);
    const cJSON *dn = cJSON_GetObjectItemCaseSensitive(d, "name"), *ln = cJSON_GetObjectItemCaseSensitive(l, "name");
    const cJSON *lh = cJSON_GetObjectItemCaseSensitive(l, "spec_sha256");
    if (!cJSON_IsString(dn) || dev.name != dn->valuestring || int_member(d, "sms", -1, path) != dev.sms ||
        int_member(d, "cc", -1, path) != dev.cc)
        bad_input("%s was measured on another device; give another -o", path);
    if (!cJSON_IsString(ln) || !cJSON_IsString(lh) || strcmp(ln->valuestring, lib().name) != 0 ||
        strcmp(lh->valuestring, lib().spec_sha256) != 0)
        bad_input("%s was measured for another library or spec; give another -o", path);
    const cJSON *e;
    cJSON_ArrayForEach(e, entries) {
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(e, "spec_kernel");
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(e, "winner");
        const cJSON *wms = cJSON_GetObjectItemCaseSensitive(e, "winner_ms");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "runner_up");
        const cJSON *rms = cJSON_GetObjectItemCaseSensitive(e, "runner_up_ms");
        if (!cJSON_IsString(spec) || !cJSON_IsString(w) || !cJSON_IsNumber(wms))
            bad_input("%s: an entry lacks spec_kernel, winner or winner_ms", path);
        Entry x;
        x.key = Problem{spec->valuestring, int_member(e, "m_bucket", 0, path), int_member(e, "n", 0, path),
                        int_member(e, "k", 0, path), int_member(e, "n2", 0, path)};
        x.winner = w->valuestring;
        x.winner_ms = wms->valuedouble;
        if (cJSON_IsString(r) && cJSON_IsNumber(rms)) {
            x.runner_up = r->valuestring;
            x.runner_up_ms = rms->valuedouble;
        }
        out.push_back(x);
    }
    cJSON_Delete(root);
    return out;
}

void json_string(FILE *f, const std::string &s)
{
    fputc('"', f);
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

// Writes the entries (sorted) to path through path.tmp.
void write_tuning(const char *path, const Device &dev, std::vector<Entry> entries)
{
    std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) { return key_less(a.key, b.key); });
    std::string tmp = std::string(path) + ".tmp";
    FILE *f = fopen(tmp.c_str(), "w");
    if (!f) die("cannot write %s: %s", tmp.c_str(), strerror(errno));
    fprintf(f, "{\n  \"fusegen_tuning\": 1,\n  \"device\": {\"name\": ");
    json_string(f, dev.name);
    fprintf(f, ", \"sms\": %d, \"cc\": %d},\n  \"library\": {\"name\": ", dev.sms, dev.cc);
    json_string(f, lib().name);
    fprintf(f, ", \"spec_sha256\": ");
    json_string(f, lib().spec_sha256);
    fprintf(f, "},\n  \"entries\": [");
    for (size_t i = 0; i < entries.size(); ++i) {
        const Entry &e = entries[i];
        fprintf(f, "%s\n    {\"spec_kernel\": ", i ? "," : "");
        json_string(f, e.key.spec);
        fprintf(f, ", \"m_bucket\": %" PRId64 ", \"n\": %" PRId64 ", \"k\": %" PRId64 ", \"n2\": %" PRId64
                   ",\n     \"winner\": ", e.key.m_bucket, e.key.n, e.key.k, e.key.n2);
        json_string(f, e.winner);
        fprintf(f, ", \"winner_ms\": %.6f, \"runner_up\": ", e.winner_ms);
        if (e.runner_up_ms >= 0) {
            json_string(f, e.runner_up);
            fprintf(f, ", \"runner_up_ms\": %.6f}", e.runner_up_ms);
        } else {
            fprintf(f, "null, \"runner_up_ms\": null}");
        }
    }
    fprintf(f, "\n  ]\n}\n");
    if (fflush(f) != 0 || ferror(f)) die("writing %s failed: %s", tmp.c_str(), strerror(errno));
    if (fclose(f) != 0) die("closing %s failed: %s", tmp.c_str(), strerror(errno));
    if (rename(tmp.c_str(), path) != 0) die("renaming %s to %s failed: %s", tmp.c_str(), path, strerror(errno));
}

// ---- timing --------------------------------------------------------------------------------------

// Uniform values of magnitude 0.1-1 with a random sign (never zero), of the dtype.
__global__ void fill_random(void *p, size_t n, int dtype, uint64_t seed, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
        x ^= x >> 31;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 29;
        float u = (float)(x >> 40) * (1.0f / 16777216.0f);   // [0, 1)
        float v = scale * (0.1f + 0.9f * u) * ((x & 1) ? -1.0f : 1.0f);
        if (dtype == FUSEGEN_DTYPE_F32) static_cast<float *>(p)[i] = v;
        else if (dtype == FUSEGEN_DTYPE_BF16) static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16(v);
        else static_cast<__half *>(p)[i] = __float2half(v);
    }
}

size_t dtype_bytes(fusegen_dtype t) { return t == FUSEGEN_DTYPE_F32 ? 4 : 2; }

struct DevBuf {
    void *p = nullptr;
    DevBuf() = default;
    DevBuf(const DevBuf &) = delete;
    DevBuf &operator=(const DevBuf &) = delete;
    ~DevBuf()
    {
        if (p) (void)cudaFree(p);
    }
    void alloc(size_t bytes)
    {
        if (p) CK(cudaFree(p));
        p = nullptr;
        CK(cudaMalloc(&p, bytes ? bytes : 256));
    }
};

struct Buffers {
    DevBuf a, b, out, bias, residual, gamma, beta, store[FUSEGEN_MAX_STORES];
    DevBuf b2, out2, bias2, residual2, store2[FUSEGEN_MAX_STORES], workspace;
};

void filled(DevBuf &buf, size_t elems, fusegen_dtype t, uint64_t seed, float scale, cudaStream_t s)
{
    buf.alloc(elems * dtype_bytes(t));
    fill_random<<<1024, 256, 0, s>>>(buf.p, elems, (int)t, seed, scale);
    CK(cudaGetLastError());
}

struct Options {
    int warmup = 5, runs = 20;
    uint64_t seed = 0x5eed;
};

// Reads a buffer (its xor lands in *sink only in a case that never happens, so the loads stay).
__global__ void read_all(const uint4 *p, size_t n, unsigned *sink)
{
    unsigned x = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = p[i];
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u) *sink = x;
}

// Reads twice the L2's size before a timed run, so that the operands come from DRAM as a decode
// step's weights do (4096 x 4096 bf16 weights would otherwise stay in a 50 MB L2 from one run to
// the next and favour the variants that read them more often). Reads, not writes: a memset
// leaves dirty lines whose write-back would run into the timed kernel.
void scrub_l2(cudaStream_t s)
{
    static DevBuf scrub, sink;
    static size_t bytes = 0;
    if (!bytes) {
        int device = 0, l2 = 0;
        CK(cudaGetDevice(&device));
        CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
        bytes = 2 * (size_t)(l2 > 0 ? l2 : 64 << 20);
        scrub.alloc(bytes);
        sink.alloc(sizeof(unsigned));
        CK(cudaMemset(scrub.p, 0x5a, bytes));
    }
    read_all<<<1024, 256, 0, s>>>(static_cast<const uint4 *>(scrub.p), bytes / sizeof(uint4),
                                   static_cast<unsigned *>(sink.p));
    CK(cudaGetLastError());
}

// The median time of k on p in ms (each run after an L2 scrub, outside its events).
double time_kernel(const fusegen_kernel *k, const fusegen_problem &p, const fusegen_args &args, Buffers &bufs,
                   size_t ws_bytes, const Options &opt, cudaStream_t s, std::vector<cudaEvent_t> &ev)
{
    for (int i = 0; i < opt.warmup; ++i) {
        fusegen_status st = fusegen_run(k, &p, &args, bufs.workspace.p, ws_bytes, s);
        if (st != FUSEGEN_OK) die("fusegen_run(%s): %s: %s", k->name, fusegen_status_name(st), fusegen_last_detail());
    }
    for (int i = 0; i < opt.runs; ++i) {
        scrub_l2(s);
        CK(cudaEventRecord(ev[2 * i], s));
        fusegen_status st = fusegen_run(k, &p, &args, bufs.workspace.p, ws_bytes, s);
        if (st != FUSEGEN_OK) die("fusegen_run(%s): %s: %s", k->name, fusegen_status_name(st), fusegen_last_detail());
        CK(cudaEventRecord(ev[2 * i + 1], s));
    }
    CK(cudaStreamSynchronize(s));
    std::vector<float> ms((size_t)opt.runs);
    for (int i = 0; i < opt.runs; ++i) CK(cudaEventElapsedTime(&ms[(size_t)i], ev[2 * i], ev[2 * i + 1]));
    std::sort(ms.begin(), ms.end());
    size_t h = ms.size() / 2;
    return ms.size() % 2 ? ms[h] : 0.5 * (ms[h - 1] + ms[h]);
}

// Times every eligible variant of pr; false when none is eligible.
bool measure(const Problem &pr, const Options &opt, cudaStream_t s, std::vector<cudaEvent_t> &ev, Entry &out,
             size_t *n_variants)
{
    const fusegen_kernel *first = first_variant(pr.spec);
    fusegen_problem p;
    memset(&p, 0, sizeof p);
    p.m = pr.m_bucket;
    p.n = pr.n;
    p.k = pr.k;
    p.n2 = pr.n2;
    p.a = first->a;
    p.b = first->b;
    p.out = first->out;
    p.b_layout = first->b_layout;
    p.b2_layout = first->b2_layout;
    p.epilogue = first->epilogue;
    p.epilogue2 = first->chain ? first->epilogue2 : nullptr;
    p.sm = 0;

    std::vector<const fusegen_kernel *> eligible(lib().n_kernels);
    size_t found = 0;
    fusegen_status st = fusegen_query(&lib(), &p, eligible.data(), eligible.size(), &found);
    if (st == FUSEGEN_ERR_NOT_SUPPORTED) return false;
    if (st != FUSEGEN_OK) die("fusegen_query: %s: %s", fusegen_status_name(st), fusegen_last_detail());
    eligible.resize(std::min(found, eligible.size()));
    // the spec kernel's own variants (another spec kernel may share the signature)
    eligible.erase(std::remove_if(eligible.begin(), eligible.end(),
                                  [&](const fusegen_kernel *k) { return pr.spec != k->spec_kernel; }),
                   eligible.end());
    if (eligible.empty()) return false;

    Buffers bufs;
    const uint64_t seed = opt.seed ^ ((uint64_t)pr.m_bucket << 40) ^ ((uint64_t)pr.n << 20) ^ (uint64_t)pr.k;
    const size_t m = (size_t)p.m, n = (size_t)p.n, k = (size_t)p.k, n2 = (size_t)p.n2;
    const float w_scale = 1.0f / (float)std::max<size_t>(1, k);   // keeps the sums near 1
    fusegen_args args;
    memset(&args, 0, sizeof args);
    filled(bufs.a, m * k, p.a, seed + 1, 1.0f, s);
    filled(bufs.b, n * k, p.b, seed + 2, w_scale * 16, s);
    filled(bufs.out, m * n, p.out, seed + 3, 1.0f, s);
    filled(bufs.bias, n, p.out, seed + 4, 1.0f, s);
    filled(bufs.residual, m * n, p.out, seed + 5, 1.0f, s);
    filled(bufs.gamma, n, p.out, seed + 6, 1.0f, s);
    filled(bufs.beta, n, p.out, seed + 7, 1.0f, s);
    args.a = bufs.a.p;
    args.b = bufs.b.p;
    args.out = bufs.out.p;
    args.bias = bufs.bias.p;
    args.residual = bufs.residual.p;
    args.gamma = bufs.gamma.p;
    args.beta = bufs.beta.p;
    for (int i = 0; i < FUSEGEN_MAX_STORES; ++i) {
        filled(bufs.store[i], m * n, p.out, seed + 10 + (uint64_t)i, 1.0f, s);
        args.store[i] = bufs.store[i].p;
    }
    if (first->chain) {
        filled(bufs.b2, n * n2, p.b, seed + 20, 16.0f / (float)n, s);
        filled(bufs.out2, m * n2, p.out, seed + 21, 1.0f, s);
        filled(bufs.bias2, n2, p.out, seed + 22, 1.0f, s);
        filled(bufs.residual2, m * n2, p.out, seed + 23, 1.0f, s);
        args.b2 = bufs.b2.p;
        args.out2 = bufs.out2.p;
        args.bias2 = bufs.bias2.p;
        args.residual2 = bufs.residual2.p;
        for (int i = 0; i < FUSEGEN_MAX_STORES; ++i) {
            filled(bufs.store2[i], m * n2, p.out, seed + 30 + (uint64_t)i, 1.0f, s);
            args.store2[i] = bufs.store2[i].p;
        }
    }
    size_t ws_max = 0;
    for (const fusegen_kernel *kk : eligible) {
        size_t bytes = 0;
        st = fusegen_workspace_size(kk, &p, &bytes);
        if (st != FUSEGEN_OK) die("fusegen_workspace_size(%s): %s", kk->name, fusegen_last_detail());
        ws_max = std::max(ws_max, bytes);
    }
    bufs.workspace.alloc(ws_max);
    CK(cudaStreamSynchronize(s));

    std::vector<std::pair<double, const fusegen_kernel *>> times;
    for (const fusegen_kernel *kk : eligible) times.push_back({time_kernel(kk, p, args, bufs, ws_max, opt, s, ev), kk});
    std::stable_sort(times.begin(), times.end(),
                     [](const std::pair<double, const fusegen_kernel *> &a,
                        const std::pair<double, const fusegen_kernel *> &b) { return a.first < b.first; });
    out.key = pr;
    out.winner = times[0].second->name;
    out.winner_ms = times[0].first;
    out.runner_up.clear();
    out.runner_up_ms = -1;
    if (times.size() > 1) {
        out.runner_up = times[1].second->name;
        out.runner_up_ms = times[1].first;
    }
    *n_variants = times.size();
    return true;
}

void usage(FILE *f)
{
    fprintf(f,
            "usage: fusegen-tune [--library FILE.so [--symbol NAME] | --spec SPEC.json]\n"
            "                    (--shapes FILE | --record FILE)... [-o OUT] [--warmup N] [--runs N] [--seed S]\n"
            "Times every eligible variant of library %s (or of the one --library loads: lib<name>.so\n"
            "holds <name>_library, or the table --symbol names; or of a spec's kernels, which --spec\n"
            "compiles with the JIT for this GPU) per problem on this GPU and writes the\n"
            "tuning file OUT (default fusegen_tuning.json) for fusegen_tuning_load and\n"
            "fusegen generate --tuning; an existing OUT is resumed (its problems are not measured again).\n",
            lib().name);
}

int positive(const char *flag, const char *v)
{
    char *end = nullptr;
    long x = strtol(v, &end, 10);
    if (!end || *end || x < 1 || x > 100000) bad_input("%s takes an integer from 1 to 100000", flag);
    return (int)x;
}

}  // namespace

int main(int argc, char **argv)
{
    Options opt;
    const char *out_path = "fusegen_tuning.json";
    std::vector<Problem> problems;
    // --library, --symbol and --spec first: the problems are read against the library's spec
    // kernels (a spec's once the JIT has compiled it, for the device: after the device check).
    const char *library = nullptr, *symbol = nullptr, *spec = nullptr;
    for (int i = 1; i + 1 < argc; ++i) {
        if (!strcmp(argv[i], "--library")) library = argv[++i];
        else if (!strcmp(argv[i], "--symbol")) symbol = argv[++i];
        else if (!strcmp(argv[i], "--spec")) spec = argv[++i];
        else if (argv[i][0] == '-' && strcmp(argv[i], "-h") && strcmp(argv[i], "--help")) ++i;   // an option's value
    }
    if (symbol && !library) bad_input("--symbol names the table of a --library; give --library too");
    if (library && spec) bad_input("--library and --spec each name the library to tune; give one");
    if (library) load_library(library, symbol);
    std::vector<std::pair<bool, const char *>> inputs;   // (a recording?, path), in order
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        }
        if (a != "--shapes" && a != "--record" && a != "-o" && a != "--warmup" && a != "--runs" && a != "--seed" &&
            a != "--library" && a != "--symbol" && a != "--spec")
            bad_input("unknown option '%s' (--help lists them)", a.c_str());
        if (i + 1 >= argc) bad_input("%s needs a value", a.c_str());
        const char *v = argv[++i];
        if (a == "--library" || a == "--symbol" || a == "--spec") {
            continue;   // read above
        } else if (a == "--shapes" || a == "--record") {
            inputs.push_back({a == "--record", v});
        } else if (a == "-o") {
            out_path = v;
        } else if (a == "--warmup") {
            opt.warmup = positive("--warmup", v);
        } else if (a == "--runs") {
            opt.runs = positive("--runs", v);
        } else {
            char *end = nullptr;
            errno = 0;
            opt.seed = strtoull(v, &end, 0);
            if (errno != 0 || !end || *end || !*v) bad_input("--seed takes an unsigned integer");
        }
    }
    if (inputs.empty()) {
        usage(stderr);
        return 2;
    }
    fusegen_jit *jit = spec ? open_spec(spec) : nullptr;   // (its errors: exit 2, before any device)
    const auto read_inputs = [&] {
        for (const auto &in : inputs) {
            if (in.first) read_record(problems, in.second);
            else read_shapes(problems, in.second);
        }
        if (problems.empty()) bad_input("the inputs hold no problem for library %s", lib().name);
    };
    if (!jit) read_inputs();

    Device dev = current_device();
    if (jit) {
        fusegen_jit_cache_result cache = FUSEGEN_JIT_CACHE_OFF;
        const fusegen_status st = fusegen_jit_compile(jit, nullptr, &cache);
        if (st != FUSEGEN_OK) die("--spec %s: %s: %s", spec, fusegen_status_name(st), fusegen_last_detail());
        g_library = fusegen_jit_library(jit);
        printf("fusegen-tune: %s compiled by the JIT for %s (%s)\n", spec, fusegen_jit_arch(jit),
               cache == FUSEGEN_JIT_CACHE_HIT ? "from the disk cache" : "compiled now");
        read_inputs();
    }
    std::vector<Entry> entries = read_tuning(out_path, dev);
    printf("fusegen-tune: %s, %d SMs, cc %d; library %s; %zu problem(s), %zu already in %s\n", dev.name.c_str(),
           dev.sms, dev.cc, lib().name, problems.size(), entries.size(), out_path);

    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::vector<cudaEvent_t> ev((size_t)opt.runs * 2);
    for (cudaEvent_t &e : ev) CK(cudaEventCreate(&e));

    size_t done = 0, measured = 0;
    for (const Problem &pr : problems) {
        ++done;
        bool known = false;
        for (const Entry &e : entries) known = known || same_key(e.key, pr);
        printf("[%zu/%zu] %s m<=%" PRId64 " n=%" PRId64 " k=%" PRId64 " n2=%" PRId64 ": ", done, problems.size(),
               pr.spec.c_str(), pr.m_bucket, pr.n, pr.k, pr.n2);
        if (known) {
            printf("in %s already\n", out_path);
            continue;
        }
        fflush(stdout);
        Entry e;
        size_t variants = 0;
        if (!measure(pr, opt, s, ev, e, &variants)) {
            printf("no variant can run it here\n");
            continue;
        }
        entries.push_back(e);
        ++measured;
        write_tuning(out_path, dev, entries);
        printf("%s %.4f ms", e.winner.c_str(), e.winner_ms);
        if (e.runner_up_ms >= 0) printf(", then %s %.4f ms", e.runner_up.c_str(), e.runner_up_ms);
        printf(" (%zu variants)\n", variants);
    }
    if (measured == 0) write_tuning(out_path, dev, entries);
    for (cudaEvent_t e : ev) CK(cudaEventDestroy(e));
    CK(cudaStreamDestroy(s));
    printf("fusegen-tune: %zu measured, %zu entries in %s\n", measured, entries.size(), out_path);
    return 0;
}
