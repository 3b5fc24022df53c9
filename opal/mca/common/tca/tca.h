/*
 * tca.h - the TCA (Tightly Coupled Accelerators) C API.
 *
 * Source-compatible with the TCA API used by published PEACH2 programs
 * (tcaInit, tcaMalloc, tcaCreateHandle, tcaDescSetMemcpy, tcaStartDMADesc,
 * tcaWaitDMARecvDesc, ...).  Functions marked "extension" are ours: PIO
 * helpers, explicit initialisation, counters and triggered descriptors for
 * offloaded collectives.
 *
 * The device is put-only, like PEACH2: data moves from local memory to any
 * node's memory; a remote read is refused with tcaErrorRemoteRead.
 */
#ifndef TCA_H
#define TCA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TCA_API __attribute__((visibility("default")))
#else
#define TCA_API
#endif

#define TCA_API_VERSION 0x0100 /* 1.0 */

/* Result codes: every entry point returns one; tcaGetErrorString explains it.
 * The published name of the type is tcaresult (tca-api.h adds TCA_SUCCESS and
 * the other published spellings); tcaResult is the same type under the name
 * the project's own code uses. */
typedef enum tcaresult {
    tcaSuccess = 0,
    tcaErrorInvalidValue = 1,   /* a bad argument (NULL pointer, negative size, bad flags) */
    tcaErrorNotInitialized = 2, /* tcaInit has not been called */
    tcaErrorAlreadyInitialized =
        3, /* this process already is a different node (tcaInit itself is reference counted) */
    tcaErrorInvalidHandle = 4,      /* NULL, corrupt or unknown handle */
    tcaErrorOutOfRange = 5,         /* offset + size outside the registration */
    tcaErrorRemoteRead = 6,         /* source memory is not local: PEACH2 cannot read remotely */
    tcaErrorTooManyDescriptors = 7, /* more than 255 descriptors in one chain */
    tcaErrorInvalidChannel = 8,     /* DMA channel outside 0..3 */
    tcaErrorNotRegistered = 9,      /* memory not registered, or the registration is gone */
    tcaErrorPeerGone = 10,          /* the node that owns the memory / should notify has exited */
    tcaErrorTimeout = 11,           /* a wait exceeded the configured timeout */
    tcaErrorNoMemory = 12,
    tcaErrorNotSupported =
        13,              /* e.g. GPU memory without a CUDA device, or an unrecognised launcher */
    tcaErrorSystem = 14, /* an operating-system call failed (see the log line) */
    tcaErrorChannelBusy = 15,    /* unused since channels queue their starts (kept for the ABI) */
    tcaErrorInvalidSlot = 16,    /* notification slot outside 0..TCA_NOTIFY_SLOTS-1 */
    tcaErrorInvalidCounter = 17, /* counter index outside 0..TCA_NUM_COUNTERS-1 */
    tcaErrorJobConflict = 18,    /* another live process already is this node of this job */
    tcaErrorNotReady = 19,       /* non-blocking test: the event has not happened yet */
    tcaErrorEmptyChain =
        20, /* starting a channel on which no chain was ever loaded (an empty chain is fine) */
    tcaErrorInvalidNode = 21, /* node id outside the sub-cluster */
    tcaErrorNoResource =
        22, /* every channel / counter / slot asked for is held (tca*Acquire), or a notification with more than TCA_NOTIFY_TAGS tags outstanding on one (source, slot) */
    tcaErrorNotAcquired =
        23, /* a channel / counter / slot named by anyone but its holder (tca*Acquire): released twice, by its plain number or by an id kept past its release */
    tcaErrorAborted = 24, /* the DMA run was dropped by tcaAbortDMAC before it completed */
    tcaErrorResultCount
} tcaresult;
typedef tcaresult tcaResult;

typedef enum tcaMemoryType {
    tcaMemoryCPU = 0,
    tcaMemoryGPU = 1,
    tcaMemoryInternal = 2 /* extension: PEACH2-internal memory of this node (PIO target) */
} tcaMemoryType;

/* Descriptor flags (tcaDescSetMemcpy / tcaDescSetMemcpy2D). */
enum {
    tcaDMAUseInternal = 0x01, /* descriptor table held on the board: no host fetch cost */
    tcaDMAUseNotifyInternal =
        0x02,                /* notification slots in internal memory (always so on loopback) */
    tcaDMANotify = 0x04,     /* notify the destination node (slot, tag) after the data landed */
    tcaDMANotifySelf = 0x08, /* notify the source node itself after the data landed */
    tcaDMAPipeline = 0x10,   /* may overlap with the previous descriptor (timing model only) */
    tcaDMAContinue =
        0x20 /* historical: "another descriptor follows in this chain"; accepted, no effect */
};

#define TCA_NUM_DMA_CHANNELS 4
#define TCA_MAX_DESCRIPTORS 255    /* chain held in a host descriptor table */
#define TCA_MAX_REG_DESCRIPTORS 16 /* chain held in channel registers: no fetch cost */
#define TCA_NOTIFY_SLOTS 64
/* Distinct tags with notifications not yet consumed that one source node may
 * have on one slot of one destination at a time (the count per tag is
 * unbounded for practical purposes: 2^31 outstanding); a post with one tag
 * more fails with tcaErrorNoResource and a message naming this limit.  A tag
 * whose notifications have all been consumed no longer counts. */
#define TCA_NOTIFY_TAGS 32
#define TCA_NUM_COUNTERS 256
#define TCA_MAX_NODES 64

/*
 * A handle names registered memory in the global address space.  It is a plain
 * value: copy its bytes to any process of the sub-cluster (MPI_Allgather, a
 * file, ...) and it means the same thing there.
 */
typedef struct tcaHandle {
    uint32_t magic; /* TCA_HANDLE_MAGIC when valid */
    uint16_t node;  /* owning node id */
    uint8_t region; /* tcaMemoryType of the memory */
    uint8_t reserved0;
    uint32_t reg_index; /* slot in the owner's registration table */
    uint32_t reserved1;
    uint64_t ipc_offset; /* GPU memory: offset of addr inside the IPC allocation */
    uint64_t key;        /* registration key: stale handles are detected */
    uint64_t addr;       /* registered base address in the owner's address space */
    uint64_t size;       /* registered length in bytes */
    uint64_t global;     /* base address in the global (PEACH2 BAR) address space */
    uint8_t ipc[64];     /* CUDA IPC handle for GPU memory, zero otherwise */
} tcaHandle;

#define TCA_HANDLE_MAGIC 0x48414354u /* "TCAH" */

typedef struct tcaDesc tcaDesc; /* opaque descriptor chain */

/* Explicit initialisation parameters (extension).  job_key NULL, node_id -1
 * and num_nodes 0 fall back to the environment (TCA_JOB_KEY, TCA_NODE_ID, TCA_NUM_NODES, then the
 * launcher's: Open MPI, Slurm srun, MVAPICH2 mpirun_rsh, PMI/Hydra, PMIx; node id = local rank). */
typedef struct tcaInitParams {
    const char *job_key; /* processes with the same key form one sub-cluster */
    int node_id;         /* this process's node id, 0..num_nodes-1; -1 = from environment */
    int num_nodes;       /* sub-cluster size; 0 = from environment */
} tcaInitParams;

/* ---- lifetime ----
 * Reference counted: every successful tcaInit* is matched by one tcaFinalize,
 * and a process is one node however many of its parts (the application, btl
 * tca, coll tca) initialise.  A later call joins the running node; it fails
 * with tcaErrorAlreadyInitialized only if its parameters name another node.
 * Without a tcaFinalize the node is torn down at exit.  A fork()ed child does
 * not inherit the node: it starts uninitialised and its exit leaves the
 * parent's node alone. */
TCA_API tcaResult tcaInit(void);
TCA_API tcaResult tcaInitWithParams(const tcaInitParams *params); /* extension */
TCA_API tcaResult tcaFinalize(void);
TCA_API const char *tcaGetErrorString(tcaResult result);
TCA_API tcaResult tcaGetNodeId(int *node_id);                            /* extension */
TCA_API tcaResult tcaGetNumNodes(int *num_nodes);                        /* extension */
TCA_API tcaResult tcaGetHopCount(int from_node, int to_node, int *hops); /* extension */

/* ---- memory ----
 * tcaMalloc(tcaMemoryCPU) memory is shared memory that the other nodes map
 * once: their puts into it (DMA or PIO) are plain stores, no system call.
 * Other host memory can be registered too; puts into it are single copies
 * by the kernel (process_vm_writev).  Size 0 is valid: tcaMalloc gives a
 * distinct pointer to free as usual, tcaCreateHandle a handle of 0 bytes
 * (0-byte copies to or from it are no-ops, notifications included as
 * asked; anything larger is out of range).  tcaFree ends every handle of
 * the memory: later puts into it fail with tcaErrorNotRegistered. */
TCA_API tcaResult tcaMalloc(void **ptr, size_t size, tcaMemoryType type);
TCA_API tcaResult tcaFree(void *ptr, tcaMemoryType type);
TCA_API tcaResult tcaCreateHandle(tcaHandle *handle, void *addr, size_t size, tcaMemoryType type);
TCA_API tcaResult tcaDestroyHandle(tcaHandle *handle); /* extension: deregister */
/* Extension: the live registration of `node`'s host memory (not tcaMalloc'd
 * internal memory, not GPU memory) that covers [addr, addr + size) of that
 * node's address space, as a handle: for a client that knows where it writes
 * but whose handle may be stale (a table the owner rearranges).  It names
 * memory the owner registered; tcaErrorNotRegistered if no live registration
 * covers the range, tcaErrorNotSupported on a device whose registrations only
 * their owner knows (ucx: the key is fetched by a put). */
TCA_API tcaResult tcaHandleOfAddress(int node, uint64_t addr, size_t size, tcaHandle *handle);
/* Extension: ends this node's registration at once, from any context - a
 * memory-release hook (munmap) included: it allocates nothing and takes no
 * lock that is held while memory is given back.  Later puts into it fail with
 * tcaErrorNotRegistered, a later tcaDestroyHandle of it as well.
 * tcaErrorNotSupported where the device cannot end a registration without
 * messages (ucx): tcaDestroyHandle then, outside the hook. */
TCA_API tcaResult tcaRevokeHandle(const tcaHandle *handle);
/* Extension: the live registration of `node` in slot reg_index of its table
 * with that key, as a handle: a peer can name a registration in 12 bytes
 * (its handle's reg_index and key), and the owner finds it, or
 * tcaErrorNotRegistered once it has ended (tcaDestroyHandle, tcaRevokeHandle,
 * tcaFree) - never a newer registration of the slot.  Any node's on the
 * loopback device, only this node's on the ucx device (tcaErrorNotSupported);
 * a GPU registration's handle comes without its IPC handle. */
TCA_API tcaResult tcaHandleOfKey(int node, uint32_t reg_index, uint64_t key, tcaHandle *handle);
/* tcaCreateHandleList (collective over MPI_COMM_WORLD) is in libtcacomm and
 * declared by tca-help.h: programs that include only tca-api.h declare it
 * themselves, with their own pointer type. */

/* ---- DMA descriptor chains ---- */
/* A freed, forged or never-allocated tcaDesc pointer (a second tcaDescFree
 * included) gives tcaErrorInvalidValue, not a crash.  A copy of 0 bytes (1-D
 * size 0, or 2-D width 0 or height 0) is a valid no-op descriptor. */
TCA_API tcaDesc *tcaDescNew(void);
TCA_API tcaResult tcaDescFree(tcaDesc *desc);
TCA_API tcaResult tcaDescSetMemcpy(tcaDesc *desc, tcaHandle *dst, off_t dst_off, tcaHandle *src,
                                   off_t src_off, size_t size, int flags, int wait_slot,
                                   int wait_tag);
TCA_API tcaResult tcaDescSetMemcpy2D(tcaDesc *desc, tcaHandle *dst, off_t dst_off, size_t dst_pitch,
                                     tcaHandle *src, off_t src_off, size_t src_pitch, size_t width,
                                     size_t height, int flags, int wait_slot, int wait_tag);
/* Extension (offload): the last descriptor added waits, before it issues, until
 * local counter `counter` >= value + k*step, k = number of earlier starts of the
 * channel since this chain was loaded (tcaDescSet); after its data has landed it adds `add` to counter `dst_counter` of
 * the destination node.  Pass -1 to leave either part out. */
TCA_API tcaResult tcaDescSetTrigger(tcaDesc *desc, int counter, uint64_t value, uint64_t step);
TCA_API tcaResult tcaDescSetCounterAdd(tcaDesc *desc, int dst_counter, uint64_t add);
TCA_API tcaResult tcaDescGetLength(const tcaDesc *desc, int *count); /* extension */
/* Extension: empty the list for the next chain, keeping its storage, so a
 * descriptor reused put after put (btl tca's DMA puts) allocates nothing once
 * warm.  A chain already loaded on a channel is not affected (tcaDescSet copies). */
TCA_API tcaResult tcaDescClear(tcaDesc *desc);

/* A channel runs its starts in order, each to its end, descriptor after
 * descriptor: descriptor k's data is visible before descriptor k+1's and
 * before its notifications.  tcaDescSet and tcaStartDMADesc never wait and
 * never refuse a busy channel: a start queues behind the runs started before
 * it; a load applies to the starts made after it (runs already started keep
 * their chain).  An empty chain loads and starts fine (a run that completes
 * at once); tcaErrorEmptyChain only for a start on a channel where no chain
 * was ever loaded.  A short chain (<= 64 KiB, no tcaDescSetTrigger) started
 * on an idle channel may run on the calling thread before the start returns.
 * tcaWaitDMAC waits for every run started before it (success on a channel
 * never used) and returns the first error of a run since the last wait. */
TCA_API tcaResult tcaDescSet(tcaDesc *desc, int dma_channel);
TCA_API tcaResult tcaStartDMADesc(int dma_channel);
TCA_API tcaResult tcaWaitDMAC(int dma_channel);
TCA_API tcaResult tcaTestDMAC(int dma_channel, int *done); /* extension */
/* Extension: stop the channel's running chain after the descriptor in flight
 * (a channel reset) and drop the runs queued behind it; descriptors not yet
 * issued never are, and every dropped run counts as completed (later starts
 * number their trigger epochs on from there).  The chain stays loaded.  For
 * programs whose triggered descriptors wait for epochs that will never come
 * (a freed request). */
TCA_API tcaResult tcaAbortDMAC(int dma_channel);

/* ---- notifications ---- */
/* Notifications are counted per (source node, slot, tag): each one posted is
 * consumed by exactly one wait or successful test, in any order of tags, and
 * unconsumed ones never hold up a sender (see TCA_NOTIFY_TAGS for the limit).
 * A blocking wait drives the loopback device itself (pending DMA of this
 * node runs on the waiting thread): no tcaProgress is needed.
 * Wait for a notification (slot, tag) sent by the node that owns `handle`.
 * tcaErrorNotRegistered at once (not after the timeout) if the handle's
 * registration is gone and nothing is queued; tcaErrorPeerGone if its node is. */
TCA_API tcaResult tcaWaitDMARecvDesc(tcaHandle *handle, int slot, int tag);
/* Non-blocking: *flag = 1 and the notification consumed, or *flag = 0. */
TCA_API tcaResult tcaTestDMARecvDesc(tcaHandle *handle, int slot, int tag, int *flag);

/* ---- PIO (extension): CPU stores into a remote window, for small data ---- */
/* Store size bytes at dst+dst_off; with tcaDMANotify / tcaDMANotifySelf in
 * flags, post (slot, tag) after the data is visible.  Ordered with respect to
 * earlier PIO stores of the calling thread. */
TCA_API tcaResult tcaPioWrite(tcaHandle *dst, off_t dst_off, const void *src, size_t size,
                              int flags, int slot, int tag);
/* Write-only mapping of an internal-memory window (of any node): stores become
 * PIO writes.  Loads from a remote node's window are not allowed by the device
 * model and are undefined. */
TCA_API tcaResult tcaPioMap(tcaHandle *handle, void **addr);

/* ---- counters (extension, offload) ---- */
TCA_API tcaResult tcaCounterRead(int counter, uint64_t *value);
TCA_API tcaResult tcaCounterAdd(int counter, uint64_t add); /* local: kicks triggered descriptors */
TCA_API tcaResult tcaCounterWait(int counter, uint64_t value); /* until counter >= value */
/* PIO atomic add to counter `counter` of node `node` (any node): wakes its
 * waiters and kicks its triggered descriptors, e.g. "ready for epoch k". */
TCA_API tcaResult tcaCounterAddRemote(int node, int counter, uint64_t add);
/* tcaPioWrite(dst, dst_off, src, size, 0, 0, 0), then tcaCounterAddRemote(
 * dst->node, counter, add): whoever sees the counter move sees the data.  One
 * message where the device sends messages (ucx): a segment and its count. */
TCA_API tcaResult tcaPioWriteCounterAdd(tcaHandle *dst, off_t dst_off, const void *src, size_t size,
                                        int counter, uint64_t add);

/* ---- interrupts (extension) ---- */
/* Raise the interrupt of `node` (any node, this one included).  Cheap when
 * nobody sleeps there: no system call.  tcaErrorPeerGone if that node has
 * exited. */
TCA_API tcaResult tcaInterruptRaise(int node);
/* Whether `node`'s process still runs (extension): *state is one of the
 * TCA_NODE_* values.  Alive while the process lives (a stopped process is
 * alive); finished after its tcaFinalize or normal exit; dead when it was
 * killed or vanished without either.  Lets a component that only waits
 * (nothing to put, so no tcaErrorPeerGone from a put) notice a dead peer. */
#define TCA_NODE_ALIVE 0
#define TCA_NODE_FINISHED 1
#define TCA_NODE_DEAD 2
TCA_API tcaResult tcaNodeState(int node, int *state);
/* This node's interrupt count: raises, notifications, channel completions and
 * counter updates received (wraps).  It moves from the node's first call on:
 * until someone follows it, producers do not pay for it. */
TCA_API tcaResult tcaInterruptCount(uint32_t *count);
/* Sleep until the count differs from `seen` (tcaSuccess) or timeout_us passes
 * (tcaErrorTimeout; INT64_MAX waits for ever).  Read the count, check for
 * work, then wait: no lost wake-up. */
TCA_API tcaResult tcaInterruptWait(uint32_t seen, int64_t timeout_us);

/* ---- progress (extension) ---- */
/* Lend the calling thread to the device: on the loopback device it runs
 * pending DMA-engine work (triggered descriptors whose counters arrived,
 * started chains) if the engine thread is not at it, saving its wake-up.
 * *did_work (may be NULL) tells whether anything happened.  A no-op on
 * hardware, where the engine needs no CPU. */
TCA_API tcaResult tcaProgress(int *did_work);

/* ---- device query and resource ownership (extension) ----
 *
 * The device layer owns this node's DMA channels, counters and notification
 * slots.  btl tca, coll tca and applications acquire what they use and
 * release it after; exhaustion is an ordinary error (tcaErrorNoResource) the
 * caller handles (btl tca then puts by PIO, coll tca lets libnbc run the
 * broadcast).  Acquire never hands out what someone else in this process
 * acquired, and hands out the highest free numbers first.
 *
 * Acquire returns an id: the index with its holder's token above it
 * (index | token << 16; first + i names the i-th counter of a run).  The
 * holder passes the id wherever the numbered API takes a channel, counter or
 * slot.  While it holds them, the numbered calls refuse them to everyone
 * else with tcaErrorNotAcquired - named by the plain number, or by an id
 * kept past its release: tcaDescSet / tcaStartDMADesc / tcaWaitDMAC /
 * tcaTestDMAC / tcaAbortDMAC on the channel; tcaCounterRead / Add / Wait,
 * tcaCounterAddRemote and descriptor counter adds and triggers (checked when
 * the descriptor runs) on the counter; tcaWaitDMARecvDesc /
 * tcaTestDMARecvDesc on the slot (a sender names another node's slot by
 * the id it was given; only the index is used there).  A released counter
 * is back at 0, and adds still on their way for it are refused.  Counters
 * count up to 2^48 - 1 (an add past that: tcaErrorInvalidValue).
 *
 * The numbered API otherwise stays as it was: a program may load, start and
 * wait on any channel nobody holds, and use any such counter or slot,
 * without acquiring it (published PEACH2 programs do).  A channel loaded
 * that way (tcaDescSet) is never handed out by tcaChannelAcquire afterwards;
 * counters and slots used without acquiring are not tracked, so a program
 * that shares its process with the MPI components should acquire them. */
typedef struct tcaDeviceAttr {
    int node_id;           /* this node */
    int num_nodes;         /* nodes in the sub-cluster */
    int max_nodes;         /* TCA_MAX_NODES */
    int dma_channels;      /* TCA_NUM_DMA_CHANNELS */
    int free_dma_channels; /* neither acquired nor loaded without acquiring */
    int counters;          /* TCA_NUM_COUNTERS */
    int free_counters;     /* not acquired */
    int notify_slots;      /* TCA_NOTIFY_SLOTS */
    int free_notify_slots; /* not acquired */
    int notify_depth; /* TCA_NOTIFY_TAGS: tags with unconsumed notifications per (source, slot); counts per tag are not limited */
    int max_descriptors;     /* TCA_MAX_DESCRIPTORS per chain */
    int max_reg_descriptors; /* TCA_MAX_REG_DESCRIPTORS: chains held in channel registers */
    int max_registrations;   /* live handles (tcaCreateHandle) per node */
    int registrations;       /* live handles of this node now */
    uint64_t internal_size;  /* internal memory of this node (TCA_INTERNAL_SIZE) */
    uint64_t internal_used;  /* of it, allocated with tcaMalloc(tcaMemoryInternal) */
    int heap_arenas; /* shared-memory arenas holding this node's tcaMalloc(tcaMemoryCPU) memory */
    int peer_arenas_mapped; /* other nodes' arenas this node has mapped: its puts into them are plain stores */
    int reserved[6]; /* zero; room for later limits */
} tcaDeviceAttr;

TCA_API tcaResult tcaQueryDevice(tcaDeviceAttr *attr);
/* One free DMA channel's id into *channel (tcaErrorNoResource if none). */
TCA_API tcaResult tcaChannelAcquire(int *channel);
TCA_API tcaResult tcaChannelRelease(int channel);
/* `count` consecutive counters, the first's id in *first (coll tca addresses
 * a request's counters as first + i); tcaErrorNoResource if no such run is free. */
TCA_API tcaResult tcaCounterAcquire(int count, int *first);
TCA_API tcaResult tcaCounterRelease(int first, int count);
/* One notification slot into *slot. */
TCA_API tcaResult tcaSlotAcquire(int *slot);
TCA_API tcaResult tcaSlotRelease(int slot);

/* ---- describing the device (extension; what tca_info prints) ---- */
/* The sub-cluster's shape: of the running device (tcaQueryTopology), or of a
 * model of num_nodes nodes without any device (tcaQueryModelTopology;
 * s_links needs an even num_nodes >= 4, else tcaErrorInvalidValue).  The
 * rings are ordered by node id: ring r holds nodes r * ring_size ..
 * (r + 1) * ring_size - 1, each one's east neighbour the next (wrapping). */
typedef struct tcaTopologyAttr {
    int num_nodes;
    int ring_size;     /* nodes per E/W ring */
    int s_links;       /* 1: two rings joined node by node by S links */
    int window_shift;  /* routing compares global address bits from this one up */
    uint64_t bar_base; /* the global address space: one BAR */
    uint64_t bar_size;
    uint64_t window_size; /* per node; node n's window starts at bar_base + n * window_size */
    uint64_t region_size; /* host, gpu0, gpu1, internal: one each per window, in that order */
    int reserved[8];      /* zero */
} tcaTopologyAttr;
TCA_API tcaResult tcaQueryTopology(tcaTopologyAttr *attr);
TCA_API tcaResult tcaQueryModelTopology(int num_nodes, int s_links, tcaTopologyAttr *attr);
/* Hops from one node to another in such a model (tcaGetHopCount: the running device's). */
TCA_API tcaResult tcaModelHopCount(int num_nodes, int s_links, int from_node, int to_node,
                                   int *hops);

/* The backend behind the API and how it was set up (strings NUL-terminated, truncated to fit). */
typedef struct tcaBackendAttr {
    char backend[64];        /* "loopback" */
    char job_key[128];       /* the sub-cluster's key */
    char launch_source[128]; /* where node id and count came from */
    char put_mechanism[192]; /* how host-memory puts reach another process */
    int64_t spin_ns;         /* waits spin this long, then sleep (TCA_SPIN_NS) */
    int64_t timeout_ns;      /* and give up after this (TCA_TIMEOUT_MS) */
    int gpu_built;   /* 1: built with CUDA and served by this backend (tcaMemoryGPU possible) */
    int gpu_devices; /* CUDA devices this process sees; -1: no usable CUDA runtime */
    char gpu_status[128];    /* why not, where gpu_devices is -1 */
    int host_puts_by_target; /* 1: puts into another process's private host memory are copied in by the
                                target's CPU (its engine thread or its progress) rather than by the
                                writer alone: clients that can move host data otherwise (a copy
                                protocol through rings) do better so.  Where single copy is off
                                (TCA_SINGLE_COPY=0, the kernel refuses it) or found dearer at start-up
                                (TCA_SINGLE_COPY=auto); put_mechanism says which */
    int takeover_us; /* the backend's own progress thread drives the device only this long after a
                                client last did (TCA_TAKEOVER_US, tcaSetProgressTakeover); -1: it has none */
    int spans_hosts; /* 1: the nodes may sit on several hosts (the ucx device) */
    int optimized;   /* 1: libtca and the backend were compiled with optimization (a build without
                        -O runs the data path several times slower) */
    int reserved[4]; /* zero */
} tcaBackendAttr;
TCA_API tcaResult tcaQueryBackend(tcaBackendAttr *attr);
/* Which backend tcaInitWithParams(params) would start (params may be NULL:
 * tcaInit), asked before starting it: its name into backend[len] ("loopback",
 * "ucx") and *spans_hosts 1 where its nodes may sit on several hosts, so a
 * caller that places processes knows whether to place the job's or its
 * host's.  Reads TCA_DEVICE as tcaInit does (tcaErrorInvalidValue, with a
 * detail, for a value that names no backend).  Starts nothing; works before
 * tcaInit. */
TCA_API tcaResult tcaQueryBackendChoice(const tcaInitParams *params, char *backend, size_t len,
                                        int *spans_hosts);
/* How long after a thread last drove the device (a blocking wait in libtca,
 * tcaProgress) the backend's own progress thread takes over driving it,
 * 0..1000000 us (tcaErrorInvalidValue otherwise); TCA_TAKEOVER_US sets the
 * start value (1000).  Where application threads are often off their cores
 * for longer (more processes than cores), a longer one keeps the progress
 * thread from fighting them for the device.  tcaErrorNotSupported where the
 * backend has no such thread (the loopback: the waiting thread drives it). */
TCA_API tcaResult tcaSetProgressTakeover(int microseconds);

/* The timing model's parameters, index 0, 1, ... (tcaErrorInvalidValue past
 * the last): environment variable, value in effect (the running device's,
 * else what the environment sets), unit, meaning.  The strings are static. */
TCA_API tcaResult tcaTimingParameter(int index, const char **variable, double *value,
                                     const char **unit, const char **meaning);
/* Whether the timing model is on: the running device's, else what TCA_TIMING
 * says (tcaErrorInvalidValue, after a line naming it, for a bad value):
 * 0 off, 1 delays in real time (TCA_TIMING=1), 2 virtual time
 * (TCA_TIMING=virtual). */
TCA_API tcaResult tcaTimingEnabled(int *enabled);

/* ---- virtual time (extension; docs/virtual-time.md) ----
 * With TCA_TIMING=virtual every node keeps a clock of what PEACH2 would
 * take: arrivals carry their modelled landing time, waits move the clock to
 * what they consume, and the program's own CPU time between calls into
 * libtca is charged (times TCA_CPU_FACTOR).
 * tcaWtime: seconds on this node's virtual clock in virtual time; otherwise
 * (or before tcaInit) seconds of a monotonic wall clock. */
TCA_API double tcaWtime(void);
/* Virtual time: this node's clock moves to at least `seconds` - what a
 * synchronisation the device did not carry implies (an MPI barrier over
 * another transport).  Otherwise it does nothing.  tcaErrorNotInitialized
 * before tcaInit. */
TCA_API tcaResult tcaWtimeAtLeast(double seconds);
/* Virtual time: hold = 1 stops charging the calling thread's CPU time to
 * the clock until the matching hold = 0 (nested holds count): the thread
 * runs library code whose cost is modelled, not computation (an MPI call).
 * Otherwise it does nothing.  tcaErrorNotInitialized before tcaInit. */
TCA_API tcaResult tcaVirtualTimeHold(int hold);
/* Virtual time: a message of `bytes` that a library over libtca (btl tca)
 * is about to store into node `node`'s memory through a mapping
 * (tcaPioMap): the sender's clock moves by TCA_MPI_SEND_NS, and the message
 * lands the model's PIO time of that size later plus TCA_MPI_RECV_NS; the
 * node polls for it.  Call before the store that makes it visible.
 * Otherwise it does nothing.  tcaErrorInvalidNode for a node outside the
 * sub-cluster. */
TCA_API tcaResult tcaVirtualTimeMessage(int node, size_t bytes);

/* ---- settings (extension) ----
 * Every setting that changes what libtca does (TCA_DEVICE, TCA_SINGLE_COPY,
 * TCA_TIMEOUT_MS, ...), index 0, 1, ... (tcaErrorInvalidValue past the last):
 * its variable, the name another configuration system gives it (Open MPI:
 * opal_common_tca_<name>), its default as text, what it does, and Open MPI's
 * info level (4: tuned by users, 9: the timing model).  Strings are static. */
typedef struct tcaSettingInfo {
    const char *variable;
    const char *name;
    const char *default_value;
    const char *help;
    int level;
} tcaSettingInfo;
TCA_API tcaResult tcaGetSettingInfo(int index, tcaSettingInfo *info);
/* A value given by another configuration system: it wins over the TCA_*
 * environment variable, which wins over the default.  given_by names it in
 * errors and in tcaGetSetting ("MCA parameter opal_common_tca_device");
 * value NULL withdraws it.  Read when a device starts: a running device keeps
 * what it read.  tcaErrorInvalidValue for a variable not in the list (the
 * value itself is checked where it is read, by tcaInit). */
TCA_API tcaResult tcaSetSetting(const char *variable, const char *value, const char *given_by);
/* The text of a setting as the next tcaInit reads it, and who gave it:
 * "default" (value: the default), the TCA_* variable, or the given_by of
 * tcaSetSetting.  Both truncated to their len - 1. */
TCA_API tcaResult tcaGetSetting(const char *variable, char *value, size_t value_len, char *given_by,
                                size_t given_by_len);

/* ---- housekeeping (extension) ---- */
/* The file that holds this node's state, for a launcher to remove after an
 * aborted job ("" if the backend keeps none). */
TCA_API tcaResult tcaGetBackingPath(char *path, size_t len);
/* Why this thread's last failed call failed, where libtca knows more than the
 * result code (e.g. how much /dev/shm a start needed and had): "" if nothing
 * more is known.  Works before tcaInit and after a failed one, so a component
 * can put the cause into its own error message.  Truncated to len - 1. */
TCA_API tcaResult tcaGetErrorDetail(char *text, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TCA_H */
