/* gpu_buffers.c - see gpu_buffers.h. */
#include "gpu_buffers.h"

#include <dlfcn.h>
#include <hwloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*count_fn)(int *);
typedef int (*set_fn)(int);
typedef int (*malloc_fn)(void **, size_t);
typedef int (*free_fn)(void *);
typedef int (*memcpy_fn)(void *, const void *, size_t, int);
typedef int (*memset_fn)(void *, int, size_t);
typedef int (*sync_fn)(void);
typedef int (*busid_fn)(char *, int, int);

static struct {
    count_fn count;
    set_fn set_device;
    malloc_fn malloc;
    free_fn free;
    memcpy_fn memcpy;
    memset_fn memset;
    sync_fn sync;
    busid_fn bus_id;
} cuda;

enum { CUDA_MEMCPY_DEFAULT = 4, INTERIOR_OFFSET = 512 };

/* interior pointers and the allocations they came from */
typedef struct alloc_entry {
    void *user, *base;
    struct alloc_entry *next;
} alloc_entry;
static alloc_entry *allocs;
static int
    selected_device; /* cudaSetDevice is per thread: every thread allocating selects it too */
static pthread_mutex_t allocs_lock = PTHREAD_MUTEX_INITIALIZER;

int tca_test_gpu_requested(void) {
    const char *v = getenv("TCA_TEST_GPU");
    return v != NULL && 0 == strcmp(v, "1");
}

static void fail(const char *what, int err) {
    fprintf(stderr, "GPU test buffers: %s failed (CUDA error %d)\n", what, err);
    abort();
}

/* The rule tca_info prints: a GPU is "nearest" when it hangs below a NUMA
 * node (non-I/O ancestor) whose CPUs intersect this process's binding.  The
 * local ranks share the nearest GPUs round robin; with none near (or no
 * hwloc answer), all GPUs. */
static int nearest_device(int n, int local_rank) {
    int near[64], nnear = 0;
    hwloc_topology_t topo;
    if (cuda.bus_id != NULL && 0 == hwloc_topology_init(&topo)) {
        hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
        hwloc_bitmap_t bound = hwloc_bitmap_alloc();
        if (0 == hwloc_topology_load(topo) && NULL != bound &&
            0 == hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS)) {
            for (int d = 0; d < n && nnear < 64; d++) {
                char busid[32];
                if (cuda.bus_id(busid, (int) sizeof(busid), d) != 0)
                    continue;
                hwloc_obj_t pci = hwloc_get_pcidev_by_busidstring(topo, busid);
                hwloc_obj_t parent = pci != NULL ? hwloc_get_non_io_ancestor_obj(topo, pci) : NULL;
                if (parent != NULL && parent->cpuset != NULL &&
                    hwloc_bitmap_intersects(parent->cpuset, bound))
                    near[nnear++] = d;
            }
        }
        if (NULL != bound)
            hwloc_bitmap_free(bound);
        hwloc_topology_destroy(topo);
    }
    return nnear > 0 ? near[local_rank % nnear] : local_rank % n;
}

int tca_test_gpu_open(char *why, size_t why_len) {
    static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                        "libcudart.so.11.0", NULL};
    void *lib = NULL;
    for (int i = 0; names[i] != NULL && lib == NULL; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        snprintf(why, why_len, "no CUDA runtime (libcudart) could be loaded");
        return 0;
    }
    cuda.count = (count_fn) dlsym(lib, "cudaGetDeviceCount");
    cuda.set_device = (set_fn) dlsym(lib, "cudaSetDevice");
    cuda.malloc = (malloc_fn) dlsym(lib, "cudaMalloc");
    cuda.free = (free_fn) dlsym(lib, "cudaFree");
    cuda.memcpy = (memcpy_fn) dlsym(lib, "cudaMemcpy");
    cuda.memset = (memset_fn) dlsym(lib, "cudaMemset");
    cuda.sync = (sync_fn) dlsym(lib, "cudaDeviceSynchronize");
    cuda.bus_id = (busid_fn) dlsym(lib, "cudaDeviceGetPCIBusId"); /* optional: nearest GPU */
    if (!cuda.count || !cuda.set_device || !cuda.malloc || !cuda.free || !cuda.memcpy ||
        !cuda.memset || !cuda.sync) {
        snprintf(why, why_len, "the CUDA runtime lacks a needed symbol");
        return 0;
    }
    int n = 0;
    if (cuda.count(&n) != 0 || n < 1) {
        snprintf(why, why_len, "no CUDA device");
        return 0;
    }
    /* Open MPI's and Slurm's local rank */
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (lr == NULL)
        lr = getenv("SLURM_LOCALID");
    const int local_rank = lr != NULL ? atoi(lr) : 0;
    const int device = nearest_device(n, local_rank);
    const int err = cuda.set_device(device);
    if (err != 0) {
        snprintf(why, why_len, "cudaSetDevice(%d) failed (error %d)", device, err);
        return 0;
    }
    selected_device = device;
    return 1;
}

void *tca_test_gpu_alloc(size_t n, int interior) {
    void *base = NULL;
    const size_t extra = interior ? 2 * INTERIOR_OFFSET : 0;
    int err = cuda.set_device(selected_device);
    if (err == 0)
        err = cuda.malloc(&base, (n ? n : 1) + extra);
    if (err != 0)
        fail("cudaMalloc", err);
    if (!interior)
        return base;
    alloc_entry *e = malloc(sizeof(*e));
    if (e == NULL)
        fail("malloc", 0);
    e->base = base;
    e->user = (unsigned char *) base + INTERIOR_OFFSET;
    pthread_mutex_lock(&allocs_lock);
    e->next = allocs;
    allocs = e;
    pthread_mutex_unlock(&allocs_lock);
    return e->user;
}

void tca_test_gpu_free(void *p) {
    void *base = p;
    pthread_mutex_lock(&allocs_lock);
    for (alloc_entry **e = &allocs; *e != NULL; e = &(*e)->next) {
        if ((*e)->user == p) {
            alloc_entry *dead = *e;
            base = dead->base;
            *e = dead->next;
            free(dead);
            break;
        }
    }
    pthread_mutex_unlock(&allocs_lock);
    const int err = cuda.free(base);
    if (err != 0)
        fail("cudaFree", err);
}

void tca_test_gpu_copy(void *dst, const void *src, size_t n) {
    if (n == 0)
        return;
    const int err = cuda.memcpy(dst, src, n, CUDA_MEMCPY_DEFAULT);
    if (err != 0)
        fail("cudaMemcpy", err);
}

void tca_test_gpu_memset(void *dst, int value, size_t n) {
    if (n == 0)
        return;
    int err = cuda.memset(dst, value, n);
    if (err == 0)
        err = cuda.sync(); /* cudaMemset is asynchronous to the host */
    if (err != 0)
        fail("cudaMemset", err);
}
