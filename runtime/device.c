/* device.c - what the runtime knows of the current device (fusegen_internal.h): its compute
 * capability, SM count and name, each read once per device ordinal, and the tests' stand-in
 * device (fusegen__device_override) for machines without a GPU. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "fusegen_internal.h"
#include "fusegen_workspace.h"

enum { DEVICE__MAX = 64 };   /* device ordinals whose facts are cached */

/* The current device's compute capability x10 and multiprocessor count. Neither can change, so
 * they are read once per device ordinal (three cudaDeviceGetAttribute calls) and after that
 * cost one cudaGetDevice. A cache slot packs both: sm x 65536 + SMs (0: not read yet). */
static _Atomic int device__cache[DEVICE__MAX];

/* The device names, read once per device ordinal (cudaGetDeviceProperties is slow, and compiled-in
 * tuning compares the name at each query): ready[d] is set (release) after names[d] is written. */
enum { DEVICE__NAME_LEN = 256 };
static pthread_mutex_t device__name_lock = PTHREAD_MUTEX_INITIALIZER;
static char device__names[DEVICE__MAX][DEVICE__NAME_LEN];
static _Atomic int device__name_ready[DEVICE__MAX];

/* The tests' device (fusegen__device_override): fake is set (release) after the rest is written. */
static pthread_mutex_t device__fake_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int device__fake;
static char device__fake_name[DEVICE__NAME_LEN];
static int device__fake_sm, device__fake_sms;

void fusegen__device_override(const char *name, int sms, int cc)
{
    pthread_mutex_lock(&device__fake_lock);
    atomic_store_explicit(&device__fake, 0, memory_order_release);
    if (name) {
        snprintf(device__fake_name, sizeof device__fake_name, "%s", name);
        device__fake_sms = sms;
        device__fake_sm = cc;
        atomic_store_explicit(&device__fake, 1, memory_order_release);
    }
    pthread_mutex_unlock(&device__fake_lock);
    fusegen__select_memo_invalidate();   /* a remembered selection was for the other device */
}

cudaError_t fusegen__device_ordinal(int *device)
{
    if (atomic_load_explicit(&device__fake, memory_order_acquire)) {
        *device = 0;
        return cudaSuccess;
    }
    return cudaGetDevice(device);
}

cudaError_t fusegen__device_info(int *sm, int *sms)
{
    int dev = 0, major = 0, minor = 0, count = 0, cached;
    cudaError_t e;
    if (atomic_load_explicit(&device__fake, memory_order_acquire)) {
        pthread_mutex_lock(&device__fake_lock);
        *sm = device__fake_sm;
        *sms = device__fake_sms;
        pthread_mutex_unlock(&device__fake_lock);
        return cudaSuccess;
    }
    e = cudaGetDevice(&dev);
    if (e != cudaSuccess)
        return e;
    if (dev >= 0 && dev < DEVICE__MAX) {
        cached = atomic_load_explicit(&device__cache[dev], memory_order_relaxed);
        if (cached > 0) {
            *sm = cached >> 16;
            *sms = cached & 0xffff;
            return cudaSuccess;
        }
    }
    e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess)
        return e;
    if (count <= 0 || count > 0xffff)
        return cudaErrorInvalidValue;
    *sm = major * 10 + minor;
    *sms = count;
    if (dev >= 0 && dev < DEVICE__MAX)
        atomic_store_explicit(&device__cache[dev], (*sm << 16) | count, memory_order_relaxed);
    return cudaSuccess;
}

cudaError_t fusegen__device_name(char *buf, size_t len)
{
    struct cudaDeviceProp prop;
    int dev = 0;
    cudaError_t e;
    if (atomic_load_explicit(&device__fake, memory_order_acquire)) {
        pthread_mutex_lock(&device__fake_lock);
        snprintf(buf, len, "%s", device__fake_name);
        pthread_mutex_unlock(&device__fake_lock);
        return cudaSuccess;
    }
    e = cudaGetDevice(&dev);
    if (e != cudaSuccess)
        return e;
    if (dev >= 0 && dev < DEVICE__MAX && atomic_load_explicit(&device__name_ready[dev], memory_order_acquire)) {
        snprintf(buf, len, "%s", device__names[dev]);
        return cudaSuccess;
    }
    e = cudaGetDeviceProperties(&prop, dev);
    if (e != cudaSuccess)
        return e;
    snprintf(buf, len, "%s", prop.name);
    if (dev >= 0 && dev < DEVICE__MAX) {
        pthread_mutex_lock(&device__name_lock);
        snprintf(device__names[dev], sizeof device__names[dev], "%s", prop.name);
        atomic_store_explicit(&device__name_ready[dev], 1, memory_order_release);
        pthread_mutex_unlock(&device__name_lock);
    }
    return cudaSuccess;
}
