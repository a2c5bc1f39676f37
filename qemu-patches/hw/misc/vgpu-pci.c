/*
 * vgpu-pci: a mediated vGPU whose backend is vgpud, spoken to over vgpud's
 * local socket protocol (no host kernel module).
 *
 * The guest sees the same PCI device the VFIO mdev path presents
 * (standard-headers/vgpu/device_abi.h): BAR0 with 4 KiB of registers,
 * BAR2 with the mailbox and one window per command channel, BAR4 with the
 * MSI-X table and PBA, an MSI capability and INTA. The same guest driver
 * drives both.
 *
 *  - BAR0: every access is a REG_READ / REG_WRITE round trip to vgpud,
 *    except the mailbox doorbell, which is an ioeventfd on the kick eventfd
 *    vgpud was given at ATTACH (so a doorbell never waits for QEMU).
 *  - BAR2: RAM, backed by the memfds vgpud sends (MAP_REGION/UNMAP_REGION);
 *    guest submissions never trap. Parts vgpud has not backed read as zero.
 *    All of BAR2 is one host mapping; a region is the memfd mapped with
 *    MAP_FIXED at its offset, so swapping the pages behind a channel window
 *    never changes the host address TCG's TLB or KVM's memory slot uses.
 *  - The shadow swap (WINDOW_BLOCK / WINDOW_MAP): BLOCK lays an MMIO region
 *    over the window whose accesses wait, then acks once every vCPU has
 *    seen the new memory map (it ran a barrier queued behind the TLB flush
 *    the map change queued, or it is itself waiting on a blocked window).
 *    MAP maps the new pages at the same host address, removes the MMIO
 *    region and lets the waiters finish their access on the new pages.
 *    Under TCG a vCPU that starts waiting flushes its own TLB first: the
 *    rest of its translation block must not store through entries for the
 *    old pages (this is why the device is built per target).
 *  - Interrupts: one eventfd per MSI-X vector; vgpud writes it, QEMU's
 *    main loop raises the vector (or MSI, or INTx when the guest has not
 *    enabled MSI-X).
 *  - vgpud going away (end of file on either socket, or a request that
 *    times out) leaves the device "lost": STATUS reads BACKEND_GONE,
 *    VGPU_IRQ_DEVICE_LOST is raised on the error vector if enabled, and
 *    QEMU and the VM's other devices carry on. A system reset re-attaches
 *    (a fresh vGPU instance; vgpud may be back by then).
 *  - Live migration (and savevm/virsh save): the vGPU's memory, channels
 *    and mailbox live in vgpud, so vgpud exports them (local protocol
 *    EXPORT) into a stream this device carries inside QEMU's migration
 *    stream, iteratively: pre-copy while the guest runs, the rest when QEMU
 *    stops it (FINISH). The destination's device hands the stream to its
 *    vgpud (IMPORT) and, once the VM's PCI state is loaded, adopts the
 *    imported VM (ATTACH with RESUME). A destination vgpud that refuses the
 *    VM (its profile, its memory) fails the load with vgpud's reason as
 *    soon as the stream's first record arrives; a cancelled or failed
 *    migration leaves the VM running on the source (CANCEL, or RESUME
 *    when the failure came after the stop). See vgpu_save_* below.
 *  - What vgpud sends is checked before QEMU maps it (vgpu_check_fd, as
 *    vgpu_mdev.ko's bar2.c checks it): a memfd (tmpfs/shmem) opened
 *    read-write, whose size covers the range, sealed against shrinking
 *    (vgpud seals every memfd it sends, vgpu/memfd.h) and not against
 *    writing; a short file, or one truncated later, would give the guest's
 *    next access SIGBUS (TCG) or an EFAULT exit (KVM), and QEMU would die.
 *    A descriptor that fails is refused (MAP_REGION answers the error,
 *    QEMU says why and runs on; the part of BAR2 stays unbacked).
 *  - The keepalive runs on a thread of its own: a hung vgpud never holds
 *    the BQL or QEMU's main loop for the round trip's timeout.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <sys/un.h>
#include "qemu/units.h"
#include "qemu/bitmap.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/host-utils.h"
#include "qemu/error-report.h"
#include "qemu/event_notifier.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/rcu.h"
#include "qemu/thread.h"
#include "qapi/error.h"
#include "exec/address-spaces.h"
#include "exec/exec-all.h"
#include "hw/core/cpu.h"
#include "hw/pci/pci.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/migration.h"
#include "migration/qemu-file.h"
#include "migration/register.h"
#include "migration/vmstate.h"
#include "sysemu/cpus.h"
#include "sysemu/runstate.h"
#include "sysemu/kvm.h"
#include "sysemu/sysemu.h"
#include "sysemu/tcg.h"
#include "qom/object.h"
#include "standard-headers/vgpu/device_abi.h"
#include "standard-headers/vgpu/local_protocol.h"
#include "trace.h"

#define TYPE_VGPU_PCI "vgpu-pci"
OBJECT_DECLARE_SIMPLE_TYPE(VGPUPCIState, VGPU_PCI)

#define VGPU_PCI_DEFAULT_SOCKET "/run/vgpud/vgpud.sock"
#define VGPU_PCI_CAP_MSIX 0x40
#define VGPU_PCI_CAP_MSI 0x50
#define VGPU_PCI_MSIX_BAR 4
#define VGPU_PCI_MSIX_BAR_SIZE 0x1000
#define VGPU_PCI_MSIX_TABLE_OFFSET 0x0
#define VGPU_PCI_MSIX_PBA_OFFSET 0x800
/* How long QEMU waits for vgpud's answer to ATTACH, REG_READ and DETACH. */
#define VGPU_PCI_DEFAULT_TIMEOUT_MS 30000
/*
 * vgpud detaches a local tenant that holds no GPU memory and sends nothing
 * for its idle_timeout_ms (default 60 s); a VM may boot, or idle with its
 * driver loaded, for longer than that, so the device reads STATUS this
 * often while the connection is up.
 */
#define VGPU_PCI_DEFAULT_KEEPALIVE_MS 10000

/* A part of BAR2 vgpud backed with MAP_REGION. */
typedef struct VGPURegion {
    struct rcu_head rcu; /* first, for call_rcu */
    MemoryRegion mr;
    uint64_t offset;
    uint64_t bytes;
    QLIST_ENTRY(VGPURegion) next;
    Object *owner; /* referenced until the region is freed */
} VGPURegion;

/* A channel window's control page + GPFIFO while vgpud swaps them. */
typedef struct VGPUWindow {
    struct VGPUPCIState *dev;
    MemoryRegion blocker;
    bool blocked;
    uint64_t offset;
    uint64_t bytes;
    int64_t blocked_at_ns; /* QEMU_CLOCK_REALTIME */
} VGPUWindow;

/*
 * What the shadow swaps cost the guest, read-only QOM properties
 * (qom-get DEV x-window-...): how long windows stayed blocked (from
 * WINDOW_BLOCK to the end of WINDOW_MAP) and how long guest accesses waited.
 */
typedef struct VGPUSwapStats {
    uint64_t swaps;
    uint64_t blocked_ns_total;
    uint64_t blocked_ns_max;
    uint64_t waits;
    uint64_t wait_ns_total;
    uint64_t wait_ns_max;
} VGPUSwapStats;

/*
 * An interrupt eventfd vgpud writes to raise one MSI-X vector. With KVM's
 * irqfd and the guest's MSI-X on, an unmasked vector's eventfd is an irqfd:
 * KVM injects the interrupt and QEMU never wakes. Otherwise QEMU's main loop
 * reads it and raises the vector (or MSI, or INTx).
 */
typedef struct VGPUIrq {
    EventNotifier notifier;
    struct VGPUPCIState *dev;
    unsigned vector;
    int virq;   /* KVM MSI route while the guest has MSI-X on, else -1 */
    bool irqfd; /* the eventfd is an irqfd now */
} VGPUIrq;

struct VGPUPCIState {
    PCIDevice parent_obj;

    /* properties */
    char *socket_path;
    char *vm_name;
    char *profile;
    uint32_t timeout_ms;
    uint32_t keepalive_ms;

    MemoryRegion bar0;
    MemoryRegion bar2;
    MemoryRegion msix_bar;
    uint64_t bar2_size;
    uint8_t *bar2_host; /* bar2_size bytes, every page always mapped */
    QLIST_HEAD(, VGPURegion) regions;
    VGPUWindow window[VGPU_MAX_CHANNELS];
    QemuCond window_cond; /* with the BQL: a window unblocked, or lost */

    /* The quiescence barrier of the current WINDOW_BLOCK (BQL). */
    QemuCond barrier_cond;
    uint64_t barrier_gen;
    unsigned long *barrier_owed; /* cpu_index bits not yet quiescent */
    long barrier_bits;
    unsigned long *cpu_waiting; /* cpu_index bits waiting on a window */
    long cpu_waiting_bits;

    /* vgpud */
    QemuMutex sock_lock; /* the main socket: one request at a time */
    int sock;
    int backend;
    uint32_t seq;
    uint32_t vm_id;
    EventNotifier kick;
    bool doorbell_eventfd; /* kick is BAR0's doorbell ioeventfd */
    VGPUIrq irq[VGPU_MSIX_VECTORS];
    bool attached;
    bool fresh; /* attached, and the guest has not used it since */
    bool lost;
    bool detaching; /* vgpu_detach serves the backend channel */
    /* the keepalive thread (vgpu_keepalive_main); running: BQL */
    QemuThread keepalive_thread;
    QemuMutex keepalive_lock;
    QemuCond keepalive_cond; /* keepalive_lock: stop asked */
    bool keepalive_running;
    bool keepalive_stop; /* keepalive_lock */
    uint32_t attach_gen; /* BQL: attaches so far */

    /* registers QEMU answers itself once vgpud is gone */
    uint32_t identity[VGPU_REG_CHANNEL_STRIDE / 4 + 1];
    uint32_t irq_mask;
    uint32_t lost_irq_status;
    bool intx_level;

    VGPUSwapStats stats;

    /* migration (vgpu_save_*, vgpu_load_*) */
    bool incoming;     /* realized for an incoming migration: attach deferred */
    int mig_stream;    /* source: the export stream's read end; destination:
                          the import stream's write end; else -1 */
    int mig_import;    /* destination: the IMPORT connection, else -1 */
    bool mig_exporting; /* source: START done, FINISH/CANCEL not yet */
    bool mig_held;     /* source: FINISH done, vgpud holds the VM stopped */
    bool mig_imported; /* destination: vgpud imported the VM */
    VMChangeStateEntry *vm_change;
    /* the last export's figures (read-only QOM properties x-migration-*) */
    uint64_t mig_vm_bytes;
    uint64_t mig_bytes_sent;
    uint64_t mig_precopy_bytes;
    uint64_t mig_downtime_ns;
    uint32_t mig_rounds;
    /* TCG only: vgpu_tcg_dirty_* (the guest's RAM dirty tracking) */
    MemoryListener tcg_dirty;
    bool tcg_dirty_registered;
    bool tcg_paused; /* vCPUs paused across one migration bitmap sync */
};

/* ---------------------------------------------------------------- socket */

static int vgpu_wait_fd(int fd, short events, int timeout_ms)
{
    struct pollfd pfd = { .fd = fd, .events = events };
    int64_t deadline = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + timeout_ms;

    for (;;) {
        int64_t left = deadline - qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
        int n = poll(&pfd, 1, left > 0 ? left : 0);

        if (n > 0) {
            return 0;
        }
        if (n == 0) {
            return -ETIMEDOUT;
        }
        if (errno != EINTR) {
            return -errno;
        }
    }
}

static int vgpu_send(int sock, uint32_t type, uint32_t seq, uint32_t flags,
                     const void *payload, uint32_t size, const int *fds,
                     unsigned nfds, int timeout_ms)
{
    struct vgpu_local_header header = {
        .type = type, .size = size, .seq = seq, .flags = flags,
    };
    struct iovec iov[2] = {
        { .iov_base = &header, .iov_len = sizeof(header) },
        { .iov_base = (void *)payload, .iov_len = size },
    };
    union {
        char buf[CMSG_SPACE(sizeof(int) * VGPU_LOCAL_MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct msghdr msg = { .msg_iov = iov, .msg_iovlen = size ? 2 : 1 };

    assert(nfds <= VGPU_LOCAL_MAX_FDS);
    if (nfds) {
        struct cmsghdr *cmsg;

        memset(&control, 0, sizeof(control));
        msg.msg_control = control.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        cmsg = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * nfds);
    }
    for (;;) {
        ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        int ret;

        if (n >= 0) {
            return n == sizeof(header) + size ? 0 : -EPROTO;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return -errno;
        }
        ret = vgpu_wait_fd(sock, POLLOUT, timeout_ms);
        if (ret) {
            return ret;
        }
    }
}

/* One received datagram: header, payload, descriptors. */
typedef struct VGPUMessage {
    struct vgpu_local_header header;
    union {
        uint8_t bytes[VGPU_LOCAL_MSG_MAX];
        struct vgpu_local_attach_reply attach_reply;
        struct vgpu_local_reg reg;
        struct vgpu_local_status status;
        struct vgpu_local_region region;
        struct vgpu_local_window_block window_block;
        struct vgpu_local_window_map window_map;
        struct vgpu_local_export_reply export_reply;
        struct vgpu_local_import_reply import_reply;
    } payload;
    int fds[VGPU_LOCAL_MAX_FDS];
    unsigned nfds;
} VGPUMessage;

static void vgpu_message_close_fds(VGPUMessage *m)
{
    unsigned i;

    for (i = 0; i < m->nfds; i++) {
        close(m->fds[i]);
    }
    m->nfds = 0;
}

/*
 * Receive one datagram. timeout_ms < 0: do not wait (-EAGAIN when none).
 * Returns 0, -EPIPE at end of file, or a negative errno.
 */
static int vgpu_recv(int sock, VGPUMessage *m, int timeout_ms)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * (VGPU_LOCAL_MAX_FDS + 1))];
        struct cmsghdr align;
    } control;
    uint8_t datagram[VGPU_LOCAL_MSG_MAX];
    struct iovec iov = { .iov_base = datagram, .iov_len = sizeof(datagram) };
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = control.buf, .msg_controllen = sizeof(control.buf),
    };
    struct cmsghdr *cmsg;
    ssize_t n;
    int err = 0;

    m->nfds = 0;
    for (;;) {
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n >= 0) {
            break;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return -errno;
        }
        if (timeout_ms < 0) {
            return -EAGAIN;
        }
        err = vgpu_wait_fd(sock, POLLIN, timeout_ms);
        if (err) {
            return err;
        }
    }
    for (cmsg = CMSG_FIRSTHDR(&mh); cmsg; cmsg = CMSG_NXTHDR(&mh, cmsg)) {
        size_t count, i;

        if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) {
            err = -EPROTO;
            continue;
        }
        count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (i = 0; i < count; i++) {
            int fd;

            memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
            if (m->nfds < VGPU_LOCAL_MAX_FDS) {
                m->fds[m->nfds++] = fd;
            } else {
                close(fd);
                err = -EPROTO;
            }
        }
    }
    if (n == 0) {
        vgpu_message_close_fds(m);
        return -EPIPE;
    }
    if (err || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
        (size_t)n < sizeof(m->header)) {
        vgpu_message_close_fds(m);
        return -EPROTO;
    }
    memcpy(&m->header, datagram, sizeof(m->header));
    if (m->header.size != n - sizeof(m->header)) {
        vgpu_message_close_fds(m);
        return -EPROTO;
    }
    memcpy(m->payload.bytes, datagram + sizeof(m->header), m->header.size);
    return 0;
}

/* The protocol's checks on a message before it is used. */
static bool vgpu_message_is(const VGPUMessage *m, uint32_t type, bool reply,
                            uint32_t size, unsigned nfds)
{
    return m->header.type == type && m->header.size == size &&
           m->header.flags == (reply ? VGPU_LOCAL_FLAG_REPLY : 0) &&
           m->nfds == nfds;
}

/* --------------------------------------------------------------- windows */

/* Wake everything waiting on a window and drop every block (BQL). */
static void vgpu_unblock_all(VGPUPCIState *s)
{
    unsigned i;

    memory_region_transaction_begin();
    for (i = 0; i < VGPU_MAX_CHANNELS; i++) {
        if (s->window[i].blocked) {
            memory_region_del_subregion(&s->bar2, &s->window[i].blocker);
            s->window[i].blocked = false;
        }
    }
    memory_region_transaction_commit();
    qemu_cond_broadcast(&s->window_cond);
    qemu_cond_broadcast(&s->barrier_cond);
}

static void vgpu_mark_cpu(unsigned long **map, long *bits, int index, bool on)
{
    if (index >= *bits) {
        long nbits = MAX(index + 1, 2 * *bits);

        *map = bitmap_zero_extend(*map, *bits, nbits);
        *bits = nbits;
    }
    if (on) {
        set_bit(index, *map);
    } else {
        clear_bit(index, *map);
    }
}

static void vgpu_cpu_quiescent(VGPUPCIState *s, int index)
{
    if (s->barrier_owed && index < s->barrier_bits) {
        clear_bit(index, s->barrier_owed);
        if (bitmap_empty(s->barrier_owed, s->barrier_bits)) {
            qemu_cond_broadcast(&s->barrier_cond);
        }
    }
}

/* A guest access to a blocked window: wait until vgpud maps the new pages,
 * then do the access on them. */
static void vgpu_window_wait(VGPUWindow *w)
{
    VGPUPCIState *s = w->dev;
    int cpu = current_cpu ? current_cpu->cpu_index : -1;
    int64_t start = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    uint64_t waited;

    if (cpu >= 0) {
        /*
         * Under TCG this vCPU may still hold TLB entries for the window's
         * other pages from before the block: the flush the map change
         * queued for it runs when it leaves its translation block, which
         * it cannot do while it waits here, and the rest of the block may
         * store through them. Flush them now; only then is it quiescent.
         * Nothing it does after the wait then reaches pages the memory map
         * no longer shows, whichever windows get blocked meanwhile.
         */
        if (tcg_enabled()) {
            tlb_flush(current_cpu);
        }
        vgpu_mark_cpu(&s->cpu_waiting, &s->cpu_waiting_bits, cpu, true);
        vgpu_cpu_quiescent(s, cpu);
    }
    while (w->blocked && !s->lost) {
        qemu_cond_wait_iothread(&s->window_cond);
    }
    if (cpu >= 0) {
        clear_bit(cpu, s->cpu_waiting);
    }
    waited = qemu_clock_get_ns(QEMU_CLOCK_REALTIME) - start;
    s->stats.waits++;
    s->stats.wait_ns_total += waited;
    s->stats.wait_ns_max = MAX(s->stats.wait_ns_max, waited);
    trace_vgpu_pci_window_wait(w - s->window, waited);
}

static uint64_t vgpu_window_read(void *opaque, hwaddr addr, unsigned size)
{
    VGPUWindow *w = opaque;
    uint64_t offset = w->offset + addr;

    vgpu_window_wait(w);
    return ldn_le_p(w->dev->bar2_host + offset, size);
}

static void vgpu_window_write(void *opaque, hwaddr addr, uint64_t value,
                              unsigned size)
{
    VGPUWindow *w = opaque;
    uint64_t offset = w->offset + addr;

    vgpu_window_wait(w);
    stn_le_p(w->dev->bar2_host + offset, size, value);
}

static const MemoryRegionOps vgpu_window_ops = {
    .read = vgpu_window_read,
    .write = vgpu_window_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

typedef struct VGPUBarrier {
    VGPUPCIState *s;
    uint64_t gen;
} VGPUBarrier;

/* Runs on a vCPU, with the BQL, after the TLB flush the map change queued. */
static void vgpu_barrier_run(CPUState *cpu, run_on_cpu_data data)
{
    VGPUBarrier *b = data.host_ptr;

    if (b->gen == b->s->barrier_gen) {
        vgpu_cpu_quiescent(b->s, cpu->cpu_index);
    }
    object_unref(OBJECT(b->s));
    g_free(b);
}

/*
 * Wait (BQL released meanwhile) until no vCPU can still access the pages the
 * memory map no longer shows. Returns 0 or -ETIMEDOUT.
 */
static int vgpu_wait_quiescent(VGPUPCIState *s)
{
    int64_t deadline = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + s->timeout_ms;
    CPUState *cpu;
    long bits = 0;

    CPU_FOREACH(cpu) {
        bits = MAX(bits, cpu->cpu_index + 1);
    }
    g_free(s->barrier_owed);
    s->barrier_owed = bitmap_new(MAX(bits, 1));
    s->barrier_bits = MAX(bits, 1);
    s->barrier_gen++;
    CPU_FOREACH(cpu) {
        VGPUBarrier *b;

        if (cpu->cpu_index < s->cpu_waiting_bits &&
            test_bit(cpu->cpu_index, s->cpu_waiting)) {
            continue; /* waiting on a window: accesses nothing else */
        }
        set_bit(cpu->cpu_index, s->barrier_owed);
        b = g_new(VGPUBarrier, 1);
        b->s = s;
        b->gen = s->barrier_gen;
        object_ref(OBJECT(s));
        async_run_on_cpu(cpu, vgpu_barrier_run, RUN_ON_CPU_HOST_PTR(b));
    }
    while (!bitmap_empty(s->barrier_owed, s->barrier_bits) && !s->lost) {
        int64_t left = deadline - qemu_clock_get_ms(QEMU_CLOCK_REALTIME);

        if (left <= 0) {
            break;
        }
        qemu_cond_timedwait_iothread(&s->barrier_cond, left);
    }
    if (s->lost) {
        return -ENODEV;
    }
    return bitmap_empty(s->barrier_owed, s->barrier_bits) ? 0 : -ETIMEDOUT;
}

/* ----------------------------------------------------------------- BAR2 */

static bool vgpu_range_ok(VGPUPCIState *s, uint64_t offset, uint64_t bytes)
{
    return bytes && !(offset % VGPU_PAGE_SIZE) && !(bytes % VGPU_PAGE_SIZE) &&
           offset < VGPU_BAR2_SIZE && bytes <= VGPU_BAR2_SIZE - offset;
}

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

/*
 * May fd's [fd_offset, +bytes) back guest memory? A memfd (tmpfs/shmem),
 * opened read-write, at least that long, sealed against shrinking
 * (F_SEAL_SHRINK: vgpud's are, vgpu/memfd.h) and not against writing.
 * Anything else could turn the guest's next access into SIGBUS (a short
 * or later-truncated file) or an EFAULT exit, ending QEMU. vgpu_mdev.ko's
 * bar2.c checks the same, but holds the pages itself. NULL when fit, else
 * why not.
 */
static const char *vgpu_check_fd(int fd, uint64_t fd_offset, uint64_t bytes)
{
    struct statfs fs;
    struct stat st;
    int flags, seals;

    if (fstat(fd, &st) < 0 || fstatfs(fd, &fs) < 0) {
        return "not a file (fstat failed)";
    }
    if (!S_ISREG(st.st_mode) || fs.f_type != TMPFS_MAGIC) {
        return "not shared memory (a memfd)";
    }
    flags = fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) != O_RDWR) {
        return "not opened read-write";
    }
    if (st.st_size < 0 || fd_offset % VGPU_PAGE_SIZE ||
        fd_offset > (uint64_t)st.st_size ||
        bytes > (uint64_t)st.st_size - fd_offset) {
        return "shorter than the range it is to back";
    }
    seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
        return "not sealed against shrinking (F_SEAL_SHRINK): it could be "
               "truncated under the guest";
    }
    if (seals & (F_SEAL_WRITE
#ifdef F_SEAL_FUTURE_WRITE
                 | F_SEAL_FUTURE_WRITE
#endif
                 )) {
        return "sealed against writing";
    }
    return NULL;
}

/* Put the memfd's pages at BAR2 offset in the host mapping, once
 * vgpu_check_fd found them fit. */
static int vgpu_map_pages(VGPUPCIState *s, uint64_t offset, uint64_t bytes,
                          int fd, uint64_t fd_offset)
{
    const char *unfit = vgpu_check_fd(fd, fd_offset, bytes);
    void *p;

    if (unfit) {
        error_report("vgpu-pci '%s': refused to map BAR2 [0x%" PRIx64
                     ", +0x%" PRIx64 "): vgpud's descriptor is %s",
                     s->vm_name, offset, bytes, unfit);
        return -EBADFD; /* vgpud's ack status; not a malformed request */
    }
    p = mmap(s->bar2_host + offset, bytes, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_FIXED, fd, fd_offset);
    return p == MAP_FAILED ? -errno : 0;
}

/* Back BAR2 [offset, +bytes) by anonymous zero pages again. */
static void vgpu_unmap_pages(VGPUPCIState *s, uint64_t offset, uint64_t bytes)
{
    void *p = mmap(s->bar2_host + offset, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

    if (p == MAP_FAILED) {
        error_report("vgpu-pci: cannot reset BAR2 pages: %s", strerror(errno));
        abort(); /* the mapping would be left pointing at vgpud's pages */
    }
}

/* After every reader of the old memory map is gone. */
static void vgpu_region_free_rcu(VGPURegion *r)
{
    Object *owner = r->owner;

    object_unparent(OBJECT(&r->mr));
    g_free(r);
    object_unref(owner);
}

static int vgpu_add_region(VGPUPCIState *s, uint64_t offset, uint64_t bytes,
                           int fd, uint64_t fd_offset)
{
    g_autofree char *name = NULL;
    VGPURegion *r;
    int err;

    QLIST_FOREACH(r, &s->regions, next) {
        if (offset < r->offset + r->bytes && r->offset < offset + bytes) {
            return -EEXIST;
        }
    }
    err = vgpu_map_pages(s, offset, bytes, fd, fd_offset);
    if (err) {
        return err;
    }
    trace_vgpu_pci_map_region(offset, bytes);
    r = g_new0(VGPURegion, 1);
    r->offset = offset;
    r->bytes = bytes;
    name = g_strdup_printf("vgpu-pci.bar2@0x%" PRIx64, offset);
    memory_region_init_ram_ptr(&r->mr, OBJECT(s), name, bytes,
                               s->bar2_host + offset);
    memory_region_add_subregion_overlap(&s->bar2, offset, &r->mr, 1);
    QLIST_INSERT_HEAD(&s->regions, r, next);
    return 0;
}

static void vgpu_remove_region(VGPUPCIState *s, VGPURegion *r)
{
    QLIST_REMOVE(r, next);
    memory_region_del_subregion(&s->bar2, &r->mr);
    vgpu_unmap_pages(s, r->offset, r->bytes);
    r->owner = OBJECT(s);
    object_ref(r->owner);
    call_rcu(r, vgpu_region_free_rcu, rcu);
}

/*
 * UNMAP_REGION: every region inside [offset, +bytes) goes (vgpud may have
 * mapped a window in several pieces and unmaps it as one); a region that
 * only partly overlaps the range is a protocol error.
 */
static int vgpu_unmap_region(VGPUPCIState *s, uint64_t offset, uint64_t bytes)
{
    VGPURegion *r, *tmp;

    trace_vgpu_pci_unmap_region(offset, bytes);
    QLIST_FOREACH(r, &s->regions, next) {
        bool overlaps = r->offset < offset + bytes && offset < r->offset + r->bytes;
        bool inside = r->offset >= offset &&
                      r->offset + r->bytes <= offset + bytes;

        if (overlaps && !inside) {
            return -EINVAL;
        }
    }
    memory_region_transaction_begin();
    QLIST_FOREACH_SAFE(r, &s->regions, next, tmp) {
        if (r->offset >= offset && r->offset + r->bytes <= offset + bytes) {
            vgpu_remove_region(s, r);
        }
    }
    memory_region_transaction_commit();
    return 0;
}

static uint64_t vgpu_bar2_read(void *opaque, hwaddr addr, unsigned size)
{
    return 0; /* not backed by vgpud (yet) */
}

static void vgpu_bar2_write(void *opaque, hwaddr addr, uint64_t value,
                            unsigned size)
{
}

static const MemoryRegionOps vgpu_bar2_ops = {
    .read = vgpu_bar2_read,
    .write = vgpu_bar2_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
};

/* ------------------------------------------------------------ interrupts */

static void vgpu_raise(VGPUPCIState *s, unsigned vector)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    if (msix_enabled(pdev)) {
        msix_notify(pdev, vector);
    } else if (msi_enabled(pdev)) {
        msi_notify(pdev, 0);
    } else {
        s->intx_level = true;
        pci_set_irq(pdev, 1);
    }
}

static void vgpu_irq_event(EventNotifier *n)
{
    VGPUIrq *irq = container_of(n, VGPUIrq, notifier);

    if (event_notifier_test_and_clear(n)) {
        vgpu_raise(irq->dev, irq->vector);
    }
}

/* QEMU reads the vector's eventfd unless it is an irqfd. */
static void vgpu_watch_vector(VGPUPCIState *s, VGPUIrq *irq)
{
    bool watch = s->attached && !s->lost && !irq->irqfd;

    event_notifier_set_handler(&irq->notifier, watch ? vgpu_irq_event : NULL);
}

static int vgpu_vector_unmask(PCIDevice *pdev, unsigned vector,
                              MSIMessage msg)
{
    VGPUPCIState *s = VGPU_PCI(pdev);
    VGPUIrq *irq = &s->irq[vector];
    int ret;

    if (vector >= VGPU_MSIX_VECTORS || irq->virq < 0) {
        return -EINVAL;
    }
    ret = kvm_irqchip_update_msi_route(kvm_state, irq->virq, msg, pdev);
    if (ret < 0) {
        return ret;
    }
    kvm_irqchip_commit_routes(kvm_state);
    if (irq->irqfd) {
        return 0;
    }
    event_notifier_set_handler(&irq->notifier, NULL);
    ret = kvm_irqchip_add_irqfd_notifier_gsi(kvm_state, &irq->notifier, NULL,
                                             irq->virq);
    if (ret < 0) {
        vgpu_watch_vector(s, irq);
        return ret;
    }
    irq->irqfd = true;
    return 0;
}

static void vgpu_vector_mask(PCIDevice *pdev, unsigned vector)
{
    VGPUPCIState *s = VGPU_PCI(pdev);
    VGPUIrq *irq = &s->irq[vector];

    if (vector >= VGPU_MSIX_VECTORS || !irq->irqfd) {
        return;
    }
    kvm_irqchip_remove_irqfd_notifier_gsi(kvm_state, &irq->notifier,
                                          irq->virq);
    irq->irqfd = false;
    /* from now on QEMU reads it: msix_notify on a masked vector sets PBA */
    vgpu_watch_vector(s, irq);
    if (event_notifier_test_and_clear(&irq->notifier)) {
        vgpu_raise(s, vector);
    }
}

static void vgpu_disable_irqfd(VGPUPCIState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    unsigned i;

    if (!pdev->msix_vector_use_notifier) {
        return;
    }
    msix_unset_vector_notifiers(pdev);
    for (i = 0; i < VGPU_MSIX_VECTORS; i++) {
        vgpu_vector_mask(pdev, i);
        if (s->irq[i].virq >= 0) {
            kvm_irqchip_release_virq(kvm_state, s->irq[i].virq);
            s->irq[i].virq = -1;
        }
    }
}

static void vgpu_enable_irqfd(VGPUPCIState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    unsigned i;

    for (i = 0; i < VGPU_MSIX_VECTORS; i++) {
        KVMRouteChange c = kvm_irqchip_begin_route_changes(kvm_state);
        int virq = kvm_irqchip_add_msi_route(&c, i, pdev);

        if (virq < 0) {
            warn_report("vgpu-pci '%s': no KVM MSI route (%s); interrupts go "
                        "through QEMU", s->vm_name, strerror(-virq));
            break;
        }
        kvm_irqchip_commit_route_changes(&c);
        s->irq[i].virq = virq;
    }
    if (i < VGPU_MSIX_VECTORS ||
        msix_set_vector_notifiers(pdev, vgpu_vector_unmask, vgpu_vector_mask,
                                  NULL) < 0) {
        while (i-- > 0) {
            kvm_irqchip_release_virq(kvm_state, s->irq[i].virq);
            s->irq[i].virq = -1;
        }
    }
}

/* The guest turned MSI-X on or off: with KVM, vectors become irqfds. */
static void vgpu_pci_write_config(PCIDevice *pdev, uint32_t address,
                                  uint32_t value, int len)
{
    VGPUPCIState *s = VGPU_PCI(pdev);
    bool was_enabled = msix_enabled(pdev);

    pci_default_write_config(pdev, address, value, len);
    if (!kvm_msi_via_irqfd_enabled() || was_enabled == msix_enabled(pdev)) {
        return;
    }
    if (msix_enabled(pdev)) {
        vgpu_enable_irqfd(s);
    } else {
        vgpu_disable_irqfd(s);
    }
}

/* ------------------------------------------------------------- lifecycle */

static void vgpu_backend_event(void *opaque);

/* Ask the keepalive thread to end (BQL); vgpu_keepalive_join waits. */
static void vgpu_keepalive_stop(VGPUPCIState *s)
{
    qemu_mutex_lock(&s->keepalive_lock);
    s->keepalive_stop = true;
    qemu_cond_signal(&s->keepalive_cond);
    qemu_mutex_unlock(&s->keepalive_lock);
}

static void vgpu_keepalive_join(VGPUPCIState *s)
{
    if (s->keepalive_running) {
        vgpu_keepalive_stop(s);
        qemu_thread_join(&s->keepalive_thread);
        s->keepalive_running = false;
    }
}

static void vgpu_close_connection(VGPUPCIState *s)
{
    unsigned i;

    vgpu_keepalive_stop(s); /* before its round trip fails below */
    if (s->sock >= 0) {
        shutdown(s->sock, SHUT_RDWR); /* wakes a vCPU waiting for a reply */
    }
    vgpu_keepalive_join(s);
    if (s->backend >= 0) {
        qemu_set_fd_handler(s->backend, NULL, NULL, NULL);
        close(s->backend);
        s->backend = -1;
    }
    qemu_mutex_lock(&s->sock_lock);
    if (s->sock >= 0) {
        close(s->sock);
        s->sock = -1;
    }
    qemu_mutex_unlock(&s->sock_lock);
    for (i = 0; i < VGPU_MSIX_VECTORS; i++) {
        event_notifier_set_handler(&s->irq[i].notifier, NULL);
    }
    s->attached = false;
}

/* vgpud is gone (BQL): the guest sees the device lost, QEMU carries on. */
static void vgpu_lost(VGPUPCIState *s, const char *why)
{
    if (s->lost) {
        return;
    }
    warn_report("vgpu-pci '%s': %s; the guest sees the vGPU lost until the "
                "next reset", s->vm_name, why);
    trace_vgpu_pci_lost(s->vm_name, why);
    s->lost = true;
    vgpu_close_connection(s);
    vgpu_unblock_all(s);
    s->lost_irq_status |= VGPU_IRQ_DEVICE_LOST;
    if (s->irq_mask & VGPU_IRQ_DEVICE_LOST) {
        vgpu_raise(s, VGPU_MSIX_VECTOR_ERROR);
    }
}

static int vgpu_connect(const char *path, Error **errp)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int sock;

    if (strlen(path) >= sizeof(addr.sun_path)) {
        error_setg(errp, "vgpu-pci: socket path '%s' is longer than %zu bytes",
                   path, sizeof(addr.sun_path) - 1);
        return -1;
    }
    strcpy(addr.sun_path, path);
    sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (sock < 0) {
        error_setg_errno(errp, errno, "vgpu-pci: socket");
        return -1;
    }
    if (connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        error_setg_errno(errp, errno, "vgpu-pci: cannot connect to vgpud at "
                         "'%s' (is vgpud running, with its local socket "
                         "there? set socket=PATH otherwise)", path);
        close(sock);
        return -1;
    }
    return sock;
}

/*
 * A synchronous request on the main socket; the caller holds sock_lock.
 * The reply may carry up to reply_fds descriptors.
 */
static int vgpu_request_locked(VGPUPCIState *s, uint32_t type,
                               const void *payload, uint32_t size,
                               const int *fds, unsigned nfds,
                               VGPUMessage *reply, uint32_t reply_size,
                               unsigned reply_fds)
{
    uint32_t seq = ++s->seq;
    int err;

    if (s->sock < 0) {
        return -ENODEV;
    }
    err = vgpu_send(s->sock, type, seq, 0, payload, size, fds, nfds,
                    s->timeout_ms);
    if (err || !reply) {
        return err;
    }
    err = vgpu_recv(s->sock, reply, s->timeout_ms);
    if (err) {
        return err;
    }
    if (!vgpu_message_is(reply, type, true, reply_size, reply->nfds) ||
        reply->nfds > reply_fds || reply->header.seq != seq) {
        vgpu_message_close_fds(reply);
        return -EPROTO;
    }
    return 0;
}

/*
 * One REG_READ (the value comes back in *value) or REG_WRITE (posted) on the
 * main socket; takes sock_lock.
 */
static int vgpu_reg_access(VGPUPCIState *s, uint32_t type, uint32_t offset,
                           uint32_t *value)
{
    struct vgpu_local_reg reg = { .offset = offset, .value = *value };
    VGPUMessage reply;
    int err;

    qemu_mutex_lock(&s->sock_lock);
    err = vgpu_request_locked(s, type, &reg, sizeof(reg), NULL, 0,
                              type == VGPU_LOCAL_REG_READ ? &reply : NULL,
                              sizeof(reg), 0);
    qemu_mutex_unlock(&s->sock_lock);
    if (!err && type == VGPU_LOCAL_REG_READ) {
        *value = reply.payload.reg.value;
    }
    return err;
}

/* BAR0 round trip from a vCPU: the BQL is dropped while vgpud answers. */
static int vgpu_register(VGPUPCIState *s, uint32_t type, uint32_t offset,
                         uint32_t *value)
{
    int err;

    qemu_mutex_unlock_iothread();
    err = vgpu_reg_access(s, type, offset, value);
    qemu_mutex_lock_iothread();
    return err;
}

/*
 * DETACH (BQL held). vgpud releases the instance before it replies and asks
 * for UNMAP_REGION of the VM's channel windows meanwhile, so the backend
 * channel is served here too. sock_lock is held throughout: no vCPU's
 * register round trip can take the reply.
 */
static void vgpu_detach(VGPUPCIState *s)
{
    int64_t deadline = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + s->timeout_ms;
    uint32_t seq;
    int err;

    if (!s->attached) {
        return;
    }
    trace_vgpu_pci_detach(s->vm_name, s->vm_id);
    qemu_mutex_lock(&s->sock_lock);
    s->detaching = true;
    seq = ++s->seq;
    err = vgpu_send(s->sock, VGPU_LOCAL_DETACH, seq, 0, NULL, 0, NULL, 0,
                    s->timeout_ms);
    while (!err) {
        struct pollfd pfd[2] = {
            { .fd = s->sock, .events = POLLIN },
            { .fd = s->backend, .events = POLLIN },
        };
        int64_t left = deadline - qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
        VGPUMessage reply;

        if (left <= 0) {
            err = -ETIMEDOUT;
            break;
        }
        if (poll(pfd, 2, left) < 0) {
            err = errno == EINTR ? 0 : -errno;
            continue;
        }
        if (pfd[0].revents) {
            err = vgpu_recv(s->sock, &reply, -1);
            if (!err) {
                vgpu_message_close_fds(&reply);
                if (!vgpu_message_is(&reply, VGPU_LOCAL_DETACH, true,
                                     sizeof(struct vgpu_local_status), 0) ||
                    reply.header.seq != seq) {
                    err = -EPROTO;
                } else if (reply.payload.status.status) {
                    err = reply.payload.status.status;
                }
                break;
            }
            if (err == -EAGAIN) {
                err = 0;
            }
        } else if (pfd[1].revents) {
            vgpu_backend_event(s);
        }
    }
    s->detaching = false;
    qemu_mutex_unlock(&s->sock_lock);
    if (err && err != -EPIPE) {
        warn_report("vgpu-pci '%s': DETACH failed: %s", s->vm_name,
                    strerror(-err));
    }
    vgpu_close_connection(s);
}

/* Drop every BAR2 mapping and block (BQL). */
static void vgpu_reset_bar2(VGPUPCIState *s)
{
    VGPURegion *r, *tmp;

    vgpu_unblock_all(s);
    memory_region_transaction_begin();
    QLIST_FOREACH_SAFE(r, &s->regions, next, tmp) {
        vgpu_remove_region(s, r);
    }
    memory_region_transaction_commit();
}

/* The keepalive of attach gen failed (main loop, BQL). */
typedef struct VGPUKeepaliveLost {
    VGPUPCIState *s;
    uint32_t gen;
} VGPUKeepaliveLost;

static void vgpu_keepalive_lost(void *opaque)
{
    VGPUKeepaliveLost *l = opaque;
    VGPUPCIState *s = l->s;

    if (s->attached && !s->lost && s->attach_gen == l->gen) {
        vgpu_lost(s, "vgpud did not answer the keepalive");
    }
    object_unref(OBJECT(s));
    g_free(l);
}

/*
 * Show vgpud the VM is alive (see VGPU_PCI_DEFAULT_KEEPALIVE_MS): a STATUS
 * read every keepalive_ms, on this thread, without the BQL, so a vgpud that
 * does not answer holds neither the BQL nor the main loop for the round
 * trip's timeout. A failed read makes the device lost, in the main loop.
 */
static void *vgpu_keepalive_main(void *opaque)
{
    VGPUPCIState *s = opaque;
    uint32_t gen;

    qemu_mutex_lock(&s->keepalive_lock);
    gen = s->attach_gen;
    while (!s->keepalive_stop) {
        uint32_t status = 0;
        int err;

        qemu_cond_timedwait(&s->keepalive_cond, &s->keepalive_lock,
                            s->keepalive_ms);
        if (s->keepalive_stop) {
            break;
        }
        qemu_mutex_unlock(&s->keepalive_lock);
        err = vgpu_reg_access(s, VGPU_LOCAL_REG_READ, VGPU_REG_STATUS, &status);
        qemu_mutex_lock(&s->keepalive_lock);
        if (err && !s->keepalive_stop) {
            VGPUKeepaliveLost *l = g_new(VGPUKeepaliveLost, 1);

            l->s = s;
            l->gen = gen;
            object_ref(OBJECT(s));
            aio_bh_schedule_oneshot(qemu_get_aio_context(), vgpu_keepalive_lost,
                                    l);
            break;
        }
    }
    qemu_mutex_unlock(&s->keepalive_lock);
    return NULL;
}

/* Start the keepalive thread of this attach (BQL). */
static void vgpu_keepalive_start(VGPUPCIState *s)
{
    vgpu_keepalive_join(s);
    s->keepalive_stop = false;
    qemu_thread_create(&s->keepalive_thread, "vgpu-keepalive",
                       vgpu_keepalive_main, s, QEMU_THREAD_JOINABLE);
    s->keepalive_running = true;
}

static int vgpu_request_serving_locked(VGPUPCIState *s, uint32_t type,
                                       const void *payload, uint32_t size,
                                       const int *fds, unsigned nfds,
                                       VGPUMessage *reply, uint32_t reply_size,
                                       unsigned reply_fds, QEMUFile *f);

/* ATTACH a fresh instance, or (resume) adopt the VM vgpud imported. */
static bool vgpu_attach(VGPUPCIState *s, bool resume, Error **errp)
{
    struct vgpu_local_attach attach = {
        .protocol_version = VGPU_LOCAL_PROTOCOL_VERSION,
        .flags = resume ? VGPU_LOCAL_ATTACH_RESUME : 0,
    };
    struct vgpu_local_attach_reply *ar;
    int fds[2 + VGPU_MSIX_VECTORS];
    int pair[2];
    VGPUMessage reply;
    unsigned i;
    int err;

    s->sock = vgpu_connect(s->socket_path, errp);
    if (s->sock < 0) {
        return false;
    }
    s->seq = 0; /* sequence numbers count per connection */
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
        error_setg_errno(errp, errno, "vgpu-pci: socketpair");
        goto fail;
    }
    s->backend = pair[0];
    pstrcpy(attach.vm_name, sizeof(attach.vm_name), s->vm_name);
    pstrcpy(attach.profile, sizeof(attach.profile),
            s->profile ? s->profile : "");
    fds[0] = pair[1];
    fds[1] = event_notifier_get_fd(&s->kick);
    for (i = 0; i < VGPU_MSIX_VECTORS; i++) {
        fds[2 + i] = event_notifier_get_fd(&s->irq[i].notifier);
    }
    qemu_mutex_lock(&s->sock_lock);
    if (resume) {
        /* vgpud maps the VM's channel windows (backend channel) first */
        err = vgpu_request_serving_locked(s, VGPU_LOCAL_ATTACH, &attach,
                                          sizeof(attach), fds,
                                          2 + VGPU_MSIX_VECTORS, &reply,
                                          sizeof(struct vgpu_local_attach_reply),
                                          1, NULL);
    } else {
        err = vgpu_request_locked(s, VGPU_LOCAL_ATTACH, &attach,
                                  sizeof(attach), fds, 2 + VGPU_MSIX_VECTORS,
                                  &reply,
                                  sizeof(struct vgpu_local_attach_reply), 1);
    }
    qemu_mutex_unlock(&s->sock_lock);
    close(pair[1]);
    if (err) {
        error_setg(errp, "vgpu-pci: ATTACH to vgpud at '%s' failed: %s",
                   s->socket_path, strerror(-err));
        goto fail;
    }
    ar = &reply.payload.attach_reply;
    ar->message[sizeof(ar->message) - 1] = '\0';
    if (!ar->status && reply.nfds != 1) {
        error_setg(errp, "vgpu-pci: vgpud's ATTACH reply has no mailbox");
        vgpu_message_close_fds(&reply);
        goto fail;
    }
    if (ar->status) {
        error_setg(errp, "vgpu-pci: vgpud refused VM '%s': %s", s->vm_name,
                   ar->message[0] ? ar->message : strerror(-ar->status));
        vgpu_message_close_fds(&reply);
        goto fail;
    }
    if (ar->bar2_size != VGPU_BAR2_SIZE ||
        ar->mailbox_offset != VGPU_MAILBOX_OFFSET ||
        ar->mailbox_size != VGPU_MAILBOX_SIZE) {
        error_setg(errp, "vgpu-pci: vgpud's BAR2 layout (size 0x%" PRIx64
                   ", mailbox 0x%" PRIx64 "+0x%" PRIx64 ") is not this "
                   "QEMU's device ABI %u.%u", ar->bar2_size,
                   ar->mailbox_offset, ar->mailbox_size,
                   VGPU_ABI_VERSION_MAJOR, VGPU_ABI_VERSION_MINOR);
        vgpu_message_close_fds(&reply);
        goto fail;
    }
    err = vgpu_add_region(s, VGPU_MAILBOX_OFFSET, VGPU_MAILBOX_SIZE,
                          reply.fds[0], ar->mailbox_fd_offset);
    vgpu_message_close_fds(&reply);
    if (err) {
        error_setg(errp, "vgpu-pci: cannot map the mailbox: %s",
                   strerror(-err));
        goto fail;
    }
    s->vm_id = ar->vm_id;
    trace_vgpu_pci_attach(s->vm_name, s->vm_id);
    s->attached = true;
    s->attach_gen++;
    s->fresh = !resume;
    s->lost = false;
    s->irq_mask = 0;
    s->lost_irq_status = 0;
    qemu_set_fd_handler(s->backend, vgpu_backend_event, NULL, s);
    for (i = 0; i < VGPU_MSIX_VECTORS; i++) {
        vgpu_watch_vector(s, &s->irq[i]);
    }
    if (s->keepalive_ms) {
        vgpu_keepalive_start(s);
    }
    return true;

fail:
    if (s->backend >= 0) {
        close(s->backend);
        s->backend = -1;
    }
    close(s->sock);
    s->sock = -1;
    return false;
}

/* ------------------------------------------------------ backend channel */

static int vgpu_handle_block(VGPUPCIState *s,
                             const struct vgpu_local_window_block *b)
{
    VGPUWindow *w;
    int err;

    if (b->index >= VGPU_MAX_CHANNELS || b->reserved ||
        !vgpu_range_ok(s, b->bar2_offset, b->bytes) ||
        b->bytes > VGPU_CHANNEL_WINDOW_STRIDE) {
        return -EINVAL;
    }
    w = &s->window[b->index];
    if (w->blocked) {
        return -EBUSY;
    }
    w->offset = b->bar2_offset;
    w->bytes = b->bytes;
    w->blocked_at_ns = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    memory_region_set_size(&w->blocker, b->bytes);
    memory_region_add_subregion_overlap(&s->bar2, b->bar2_offset, &w->blocker,
                                        2);
    w->blocked = true;
    err = vgpu_wait_quiescent(s);
    trace_vgpu_pci_window_block(b->index, b->bar2_offset, b->bytes,
                                qemu_clock_get_ns(QEMU_CLOCK_REALTIME) -
                                w->blocked_at_ns, err);
    return err;
}

static int vgpu_handle_map(VGPUPCIState *s, const VGPUMessage *m)
{
    const struct vgpu_local_window_map *map = &m->payload.window_map;
    uint64_t next, blocked;
    VGPUWindow *w;
    unsigned i;
    int err;

    if (map->index >= VGPU_MAX_CHANNELS || map->reserved ||
        map->target > VGPU_LOCAL_WINDOW_SHADOW || !map->segments ||
        map->segments > VGPU_LOCAL_WINDOW_SEGMENTS_MAX ||
        map->segments != m->nfds) {
        return -EINVAL;
    }
    w = &s->window[map->index];
    if (!w->blocked) {
        return -EINVAL;
    }
    next = w->offset;
    for (i = 0; i < map->segments; i++) {
        const struct vgpu_local_region *seg = &map->segment[i];

        if (seg->bar2_offset != next || !vgpu_range_ok(s, seg->bar2_offset,
                                                       seg->bytes)) {
            return -EINVAL;
        }
        next += seg->bytes;
    }
    if (next != w->offset + w->bytes) {
        return -EINVAL;
    }
    for (i = 0; i < map->segments; i++) {
        const struct vgpu_local_region *seg = &map->segment[i];

        err = vgpu_map_pages(s, seg->bar2_offset, seg->bytes, m->fds[i],
                             seg->fd_offset);
        if (err) {
            return err;
        }
    }
    memory_region_del_subregion(&s->bar2, &w->blocker);
    w->blocked = false;
    qemu_cond_broadcast(&s->window_cond);
    blocked = qemu_clock_get_ns(QEMU_CLOCK_REALTIME) - w->blocked_at_ns;
    s->stats.swaps++;
    s->stats.blocked_ns_total += blocked;
    s->stats.blocked_ns_max = MAX(s->stats.blocked_ns_max, blocked);
    trace_vgpu_pci_window_map(map->index, map->target, blocked);
    return 0;
}

static int vgpu_handle_backend(VGPUPCIState *s, VGPUMessage *m)
{
    const struct vgpu_local_header *h = &m->header;

    switch (h->type) {
    case VGPU_LOCAL_MAP_REGION:
        if (!vgpu_message_is(m, h->type, false,
                             sizeof(struct vgpu_local_region), 1) ||
            !vgpu_range_ok(s, m->payload.region.bar2_offset,
                           m->payload.region.bytes)) {
            return -EINVAL;
        }
        return vgpu_add_region(s, m->payload.region.bar2_offset,
                               m->payload.region.bytes, m->fds[0],
                               m->payload.region.fd_offset);
    case VGPU_LOCAL_UNMAP_REGION:
        if (!vgpu_message_is(m, h->type, false,
                             sizeof(struct vgpu_local_region), 0) ||
            m->payload.region.fd_offset) {
            return -EINVAL;
        }
        return vgpu_unmap_region(s, m->payload.region.bar2_offset,
                                 m->payload.region.bytes);
    case VGPU_LOCAL_WINDOW_BLOCK:
        if (!vgpu_message_is(m, h->type, false,
                             sizeof(struct vgpu_local_window_block), 0)) {
            return -EINVAL;
        }
        return vgpu_handle_block(s, &m->payload.window_block);
    case VGPU_LOCAL_WINDOW_MAP:
        if (h->type != VGPU_LOCAL_WINDOW_MAP ||
            h->size != sizeof(struct vgpu_local_window_map) || h->flags) {
            return -EINVAL;
        }
        return vgpu_handle_map(s, m);
    default:
        return -EINVAL;
    }
}

/* Main loop, BQL held: vgpud asks something on the backend channel. */
static void vgpu_backend_event(void *opaque)
{
    VGPUPCIState *s = opaque;
    struct vgpu_local_status ack = { 0 };
    VGPUMessage m;
    int err;

    err = vgpu_recv(s->backend, &m, -1);
    if (err == -EAGAIN) {
        return;
    }
    if (err && s->detaching) {
        /* vgpud closes the channel as it finishes DETACH */
        qemu_set_fd_handler(s->backend, NULL, NULL, NULL);
        close(s->backend);
        s->backend = -1;
        return;
    }
    if (err) {
        vgpu_lost(s, err == -EPIPE ? "vgpud closed the connection"
                                   : "the backend channel failed");
        return;
    }
    s->fresh = false;
    ack.status = vgpu_handle_backend(s, &m);
    vgpu_message_close_fds(&m);
    if (ack.status == -EINVAL) {
        warn_report("vgpu-pci '%s': vgpud sent a malformed %u request",
                    s->vm_name, m.header.type);
    }
    if (s->lost || s->backend < 0) {
        return;
    }
    err = vgpu_send(s->backend, m.header.type, m.header.seq,
                    VGPU_LOCAL_FLAG_REPLY, &ack, sizeof(ack), NULL, 0,
                    s->timeout_ms);
    if (err && !s->detaching) {
        vgpu_lost(s, "vgpud does not take acknowledgements");
    }
}

/* ----------------------------------------------------------------- BAR0 */

static uint64_t vgpu_bar0_read(void *opaque, hwaddr addr, unsigned size)
{
    VGPUPCIState *s = opaque;
    uint32_t value = 0;
    int err;

    s->fresh = false;
    if (!s->lost) {
        err = vgpu_register(s, VGPU_LOCAL_REG_READ, addr, &value);
        if (!err) {
            return value;
        }
        vgpu_lost(s, err == -ETIMEDOUT ? "vgpud did not answer a register "
                  "read in time" : "the connection to vgpud failed");
    }
    switch (addr) {
    case VGPU_REG_STATUS:
        return VGPU_STATUS_BACKEND_GONE;
    case VGPU_REG_IRQ_STATUS:
        return s->lost_irq_status;
    case VGPU_REG_IRQ_MASK:
        return s->irq_mask;
    default:
        return addr / 4 < ARRAY_SIZE(s->identity) ? s->identity[addr / 4] : 0;
    }
}

static void vgpu_bar0_write(void *opaque, hwaddr addr, uint64_t data,
                            unsigned size)
{
    VGPUPCIState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);
    uint32_t value = data;
    int err;

    s->fresh = false;
    if (addr == VGPU_REG_IRQ_MASK) {
        s->irq_mask = value & VGPU_IRQ_ALL;
    }
    if (s->lost) {
        if (addr == VGPU_REG_IRQ_ACK) {
            s->lost_irq_status &= ~value;
            if (s->intx_level && !s->lost_irq_status) {
                s->intx_level = false;
                pci_set_irq(pdev, 0);
            }
        }
        return;
    }
    err = vgpu_register(s, VGPU_LOCAL_REG_WRITE, addr, &value);
    if (err) {
        vgpu_lost(s, "the connection to vgpud failed");
        return;
    }
    if (addr == VGPU_REG_IRQ_ACK && s->intx_level) {
        uint32_t status = 0;

        /* INTx is level triggered: drop it once nothing enabled is pending */
        if (!vgpu_register(s, VGPU_LOCAL_REG_READ, VGPU_REG_IRQ_STATUS,
                           &status) && !(status & s->irq_mask)) {
            s->intx_level = false;
            pci_set_irq(pdev, 0);
        }
    }
}

static const MemoryRegionOps vgpu_bar0_ops = {
    .read = vgpu_bar0_read,
    .write = vgpu_bar0_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 4 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

/* Identity registers, kept so the device still describes itself once lost. */
static bool vgpu_read_identity(VGPUPCIState *s, Error **errp)
{
    static const uint32_t regs[] = {
        VGPU_REG_MAGIC, VGPU_REG_ABI_VERSION, VGPU_REG_FEATURES,
        VGPU_REG_BAR2_SIZE_LO, VGPU_REG_BAR2_SIZE_HI, VGPU_REG_MAX_CHANNELS,
        VGPU_REG_CHANNEL_STRIDE,
    };
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(regs); i++) {
        int err;

        s->identity[regs[i] / 4] = 0;
        err = vgpu_reg_access(s, VGPU_LOCAL_REG_READ, regs[i],
                              &s->identity[regs[i] / 4]);
        if (err) {
            error_setg(errp, "vgpu-pci: reading vgpud's register 0x%x failed: "
                       "%s", regs[i], strerror(-err));
            return false;
        }
    }
    if (s->identity[VGPU_REG_MAGIC / 4] != VGPU_MAGIC ||
        s->identity[VGPU_REG_ABI_VERSION / 4] >> 16 != VGPU_ABI_VERSION_MAJOR) {
        error_setg(errp, "vgpu-pci: vgpud presents magic 0x%x, ABI %u.%u; "
                   "this QEMU speaks ABI %u.%u: update one of them",
                   s->identity[VGPU_REG_MAGIC / 4],
                   s->identity[VGPU_REG_ABI_VERSION / 4] >> 16,
                   s->identity[VGPU_REG_ABI_VERSION / 4] & 0xffff,
                   VGPU_ABI_VERSION_MAJOR, VGPU_ABI_VERSION_MINOR);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ migration */

/*
 * The vGPU's section of QEMU's migration stream is vgpud's export stream
 * (its own versioned, checksummed records) cut into frames: a big-endian
 * 32-bit length and that many bytes. A length of VGPU_MIG_END_OF_PASS ends
 * one call's part (setup, an iteration), VGPU_MIG_END_OF_STREAM the whole
 * stream (the stop-and-copy's end).
 */
#define VGPU_MIG_END_OF_PASS 0u
#define VGPU_MIG_END_OF_STREAM 0xffffffffu
#define VGPU_MIG_FRAME_MAX (256u * KiB)
/* What one iteration carries at most, so RAM gets its turns. */
#define VGPU_MIG_PASS_MAX (16u * MiB)
/* How long the destination waits for vgpud's verdict on the stream. */
#define VGPU_MIG_IMPORT_TIMEOUT_MS 120000

/*
 * Move what the export stream holds now into f as frames, without waiting:
 * at most max bytes, and (limited) no more once f's rate limit is reached.
 * Returns the bytes moved or a negative errno; *eof: vgpud closed it.
 */
static ssize_t vgpu_mig_forward(VGPUPCIState *s, QEMUFile *f, size_t max,
                                bool limited, bool *eof)
{
    g_autofree uint8_t *buf = g_malloc(VGPU_MIG_FRAME_MAX);
    size_t total = 0;

    while (total < max && !(limited && qemu_file_rate_limit(f))) {
        ssize_t n = read(s->mig_stream, buf, VGPU_MIG_FRAME_MAX);

        if (n > 0) {
            qemu_put_be32(f, n);
            qemu_put_buffer(f, buf, n);
            total += n;
        } else if (n == 0) {
            *eof = true;
            break;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            break;
        } else if (errno != EINTR) {
            return -errno;
        }
    }
    return total;
}

/*
 * A request on the main socket (sock_lock held) whose reply may take a
 * while, serving meanwhile what vgpud needs served: the backend channel
 * when the caller holds the BQL (the main loop cannot), and (f) the export
 * stream, forwarded into f until vgpud closes it. The reply is awaited
 * timeout ms after the last sign of progress.
 */
static int vgpu_request_serving_locked(VGPUPCIState *s, uint32_t type,
                                       const void *payload, uint32_t size,
                                       const int *fds, unsigned nfds,
                                       VGPUMessage *reply, uint32_t reply_size,
                                       unsigned reply_fds, QEMUFile *f)
{
    bool serve = qemu_mutex_iothread_locked();
    bool eof = !f || s->mig_stream < 0, replied = false;
    uint32_t seq = ++s->seq;
    int64_t deadline;
    int err;

    if (s->sock < 0) {
        return -ENODEV;
    }
    err = vgpu_send(s->sock, type, seq, 0, payload, size, fds, nfds,
                    s->timeout_ms);
    if (err) {
        return err;
    }
    deadline = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + s->timeout_ms;
    /* a backend channel failing here must not close the connection under
     * the sock_lock this thread holds: the reply's wait reports it */
    s->detaching = true;
    while (!replied || !eof) {
        struct pollfd pfd[3];
        int n = 0, i_sock = -1, i_backend = -1, i_stream = -1;
        int64_t left = deadline - qemu_clock_get_ms(QEMU_CLOCK_REALTIME);

        if (left <= 0) {
            err = -ETIMEDOUT;
            break;
        }
        if (!replied) {
            i_sock = n;
            pfd[n++] = (struct pollfd){ .fd = s->sock, .events = POLLIN };
        }
        if (serve && s->backend >= 0) {
            i_backend = n;
            pfd[n++] = (struct pollfd){ .fd = s->backend, .events = POLLIN };
        }
        if (!eof) {
            i_stream = n;
            pfd[n++] = (struct pollfd){ .fd = s->mig_stream, .events = POLLIN };
        }
        if (poll(pfd, n, left) < 0) {
            if (errno == EINTR) {
                continue;
            }
            err = -errno;
            break;
        }
        if (i_stream >= 0 && pfd[i_stream].revents) {
            ssize_t moved = vgpu_mig_forward(s, f, VGPU_MIG_PASS_MAX, false,
                                             &eof);

            if (moved < 0) {
                err = moved;
                break;
            }
            deadline = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + s->timeout_ms;
        }
        if (i_sock >= 0 && pfd[i_sock].revents) {
            err = vgpu_recv(s->sock, reply, -1);
            if (err == -EAGAIN) {
                err = 0;
            } else if (err) {
                break;
            } else if (!vgpu_message_is(reply, type, true, reply_size,
                                        reply->nfds) ||
                       reply->nfds > reply_fds || reply->header.seq != seq) {
                vgpu_message_close_fds(reply);
                err = -EPROTO;
                break;
            } else {
                replied = true;
            }
        }
        if (i_backend >= 0 && pfd[i_backend].revents) {
            vgpu_backend_event(s);
        }
    }
    s->detaching = false;
    if (err && replied) {
        vgpu_message_close_fds(reply);
    }
    return err;
}

/* One EXPORT request (local_protocol.h); vgpud's refusal goes to errp. */
static int vgpu_export_op(VGPUPCIState *s, uint32_t op, uint32_t flags,
                          int fd, QEMUFile *f,
                          struct vgpu_local_export_reply *r, Error **errp)
{
    struct vgpu_local_export req = { .op = op, .flags = flags };
    VGPUMessage reply;
    int err;

    qemu_mutex_lock(&s->sock_lock);
    err = vgpu_request_serving_locked(s, VGPU_LOCAL_EXPORT, &req, sizeof(req),
                                      fd >= 0 ? &fd : NULL, fd >= 0, &reply,
                                      sizeof(*r), 0, f);
    qemu_mutex_unlock(&s->sock_lock);
    if (err) {
        error_setg(errp, "vgpu-pci '%s': EXPORT (op %u) to vgpud at '%s' "
                   "failed: %s", s->vm_name, op, s->socket_path,
                   strerror(-err));
        return err;
    }
    *r = reply.payload.export_reply;
    r->message[sizeof(r->message) - 1] = '\0';
    if (r->status) {
        error_setg(errp, "vgpu-pci '%s': vgpud cannot migrate the VM: %s",
                   s->vm_name, r->message[0] ? r->message
                                             : strerror(-r->status));
        return r->status < 0 ? r->status : -EPROTO;
    }
    return 0;
}

/*
 * Under TCG, QEMU 7.2's migration clears the guest RAM's dirty bits in
 * whole words (cpu_physical_memory_sync_dirty_bitmap's fast path) without
 * re-arming the vCPUs' TLB entries: a page the guest wrote before that
 * sync stays writable without the notdirty hook, and later writes to it
 * are never sent when the guest keeps that page in its TLB (a busy
 * process's kernel stack and its data, fed by the vGPU's interrupts). The
 * destination then runs with stale pages. Around each sync of a live
 * migration, pause the vCPUs and flush their TLBs before they run again,
 * so every write after the sync is seen. (KVM tracks dirty pages itself.)
 */
static void vgpu_tcg_dirty_sync(MemoryListener *listener)
{
    VGPUPCIState *s = container_of(listener, VGPUPCIState, tcg_dirty);

    if (s->tcg_paused || !(global_dirty_tracking & GLOBAL_DIRTY_MIGRATION) ||
        !runstate_is_running() || !qemu_mutex_iothread_locked()) {
        return;
    }
    pause_all_vcpus();
    s->tcg_paused = true;
}

static void vgpu_tcg_dirty_after_sync(MemoryListener *listener)
{
    VGPUPCIState *s = container_of(listener, VGPUPCIState, tcg_dirty);
    CPUState *cpu;

    if (!s->tcg_paused) {
        return;
    }
    CPU_FOREACH(cpu) {
        tlb_flush(cpu); /* runs on the vCPU before its next instruction */
    }
    s->tcg_paused = false;
    resume_all_vcpus();
}

static void vgpu_tcg_dirty_register(VGPUPCIState *s)
{
    if (!tcg_enabled() || s->tcg_dirty_registered) {
        return;
    }
    s->tcg_dirty = (MemoryListener) {
        .name = "vgpu-pci-tcg-dirty",
        .log_sync_global = vgpu_tcg_dirty_sync,
        .log_global_after_sync = vgpu_tcg_dirty_after_sync,
        .priority = 10,
    };
    memory_listener_register(&s->tcg_dirty, &address_space_memory);
    s->tcg_dirty_registered = true;
}

static void vgpu_tcg_dirty_unregister(VGPUPCIState *s)
{
    if (s->tcg_dirty_registered) {
        memory_listener_unregister(&s->tcg_dirty);
        s->tcg_dirty_registered = false;
    }
}

/* A migration fails because of the vGPU: say why, also in query-migrate. */
static void vgpu_mig_error(Error *err)
{
    migrate_set_error(migrate_get_current(), err);
    error_report_err(err);
}

static void vgpu_mig_close(VGPUPCIState *s)
{
    if (s->mig_stream >= 0) {
        close(s->mig_stream);
        s->mig_stream = -1;
    }
    if (s->mig_import >= 0) {
        close(s->mig_import);
        s->mig_import = -1;
    }
}

static bool vgpu_save_is_active(void *opaque)
{
    VGPUPCIState *s = opaque;

    return s->attached && !s->lost;
}

/* Source, migration thread: vgpud starts exporting (its first record, the
 * VM and its profile, goes at once: a destination that refuses them fails
 * the migration at its start). */
static int vgpu_save_setup(QEMUFile *f, void *opaque)
{
    VGPUPCIState *s = opaque;
    struct vgpu_local_export_reply r;
    Error *err = NULL;
    bool eof = false;
    ssize_t moved;
    int pair[2], ret;

    s->mig_held = false;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
        ret = -errno;
        error_setg_errno(&err, errno, "vgpu-pci: socketpair");
        vgpu_mig_error(err);
        return ret;
    }
    fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK);
    ret = vgpu_export_op(s, VGPU_LOCAL_EXPORT_START, VGPU_LOCAL_EXPORT_PRECOPY,
                         pair[1], NULL, &r, &err);
    close(pair[1]);
    if (ret) {
        close(pair[0]);
        vgpu_mig_error(err);
        return ret;
    }
    s->mig_stream = pair[0];
    s->mig_exporting = true;
    s->mig_vm_bytes = r.vm_bytes;
    moved = vgpu_mig_forward(s, f, VGPU_MIG_PASS_MAX, false, &eof);
    qemu_put_be32(f, VGPU_MIG_END_OF_PASS);
    return moved < 0 ? moved : qemu_file_get_error(f);
}

/* Source, migration thread: what is left to pre-copy: what waits in the
 * stream, and what vgpud still has to send (the pieces the GPU dirtied
 * that it has not sent yet, pending_kib); before its first harvest (or
 * from a vgpud without that figure), the rest of the VM's memory. QEMU
 * stops the guest once this (with RAM's) fits its downtime limit, at the
 * bandwidth it measured; early on that is guest RAM's (mostly zero pages,
 * over a local socket: many times vgpud's rate), so until vgpud has sent
 * every buffer once (its first round) this says at least the threshold:
 * no stop-and-copy with most of the vGPU's memory still to go. */
static void vgpu_save_pending(QEMUFile *f, void *opaque,
                              uint64_t threshold_size,
                              uint64_t *res_precopy_only,
                              uint64_t *res_compatible,
                              uint64_t *res_postcopy_only)
{
    VGPUPCIState *s = opaque;
    struct vgpu_local_export_reply r;
    Error *err = NULL;
    int queued = 0;

    if (!s->mig_exporting) {
        return;
    }
    if (vgpu_export_op(s, VGPU_LOCAL_EXPORT_PROGRESS, 0, -1, NULL, &r, &err)) {
        error_free(err);
        return;
    }
    if (ioctl(s->mig_stream, FIONREAD, &queued) < 0 || queued < 0) {
        queued = 0;
    }
    *res_precopy_only += queued + (uint64_t)r.pending_kib * KiB;
    if (r.dirty_tracking && !r.rounds && !r.pending_kib &&
        r.vm_bytes > r.bytes_sent) {
        *res_precopy_only += r.vm_bytes - r.bytes_sent;
    }
    if (r.dirty_tracking && !r.rounds) {
        *res_precopy_only += threshold_size;
    }
}

/* Source, migration thread: carry what vgpud's pre-copy wrote. */
static int vgpu_save_iterate(QEMUFile *f, void *opaque)
{
    VGPUPCIState *s = opaque;
    bool eof = false;
    ssize_t moved = 0;

    if (s->mig_stream >= 0) {
        moved = vgpu_mig_forward(s, f, VGPU_MIG_PASS_MAX, true, &eof);
    }
    qemu_put_be32(f, VGPU_MIG_END_OF_PASS);
    if (moved < 0) {
        return moved;
    }
    /* 0: more now (others wait their turn), 1: all there is for now */
    return moved >= VGPU_MIG_PASS_MAX || qemu_file_rate_limit(f) ? 0 : 1;
}

/* Source, guest stopped, BQL: vgpud's stop-and-copy, carried to its end. */
static int vgpu_save_complete(QEMUFile *f, void *opaque)
{
    VGPUPCIState *s = opaque;
    struct vgpu_local_export_reply r;
    Error *err = NULL;
    int ret;

    if (!s->mig_exporting) {
        error_setg(&err, "vgpu-pci '%s': no export to finish", s->vm_name);
        vgpu_mig_error(err);
        return -EINVAL;
    }
    ret = vgpu_export_op(s, VGPU_LOCAL_EXPORT_FINISH, 0, -1, f, &r, &err);
    s->mig_exporting = false;
    if (s->mig_stream >= 0) {
        close(s->mig_stream);
        s->mig_stream = -1;
    }
    if (ret) {
        vgpu_mig_error(err);
        return ret;
    }
    s->mig_held = true;
    s->mig_vm_bytes = r.vm_bytes;
    s->mig_bytes_sent = r.bytes_sent;
    s->mig_precopy_bytes = r.precopy_bytes;
    s->mig_downtime_ns = r.downtime_ns;
    s->mig_rounds = r.rounds;
    qemu_put_be32(f, VGPU_MIG_END_OF_STREAM);
    return qemu_file_get_error(f);
}

/* Source, BQL: the migration ended; an export that did not finish is
 * cancelled, the VM never stopped running in vgpud. */
static void vgpu_save_cleanup(void *opaque)
{
    VGPUPCIState *s = opaque;
    struct vgpu_local_export_reply r;
    Error *err = NULL;

    if (s->mig_exporting) {
        s->mig_exporting = false;
        if (vgpu_export_op(s, VGPU_LOCAL_EXPORT_CANCEL, 0, -1, NULL, &r,
                           &err)) {
            warn_report_err(err);
        }
    }
    if (s->mig_stream >= 0 && !s->incoming) {
        close(s->mig_stream);
        s->mig_stream = -1;
    }
}

/* The guest runs again on the source after its vGPU went (the migration
 * failed after the stop, or savevm): vgpud runs the VM again. */
static void vgpu_vm_change(void *opaque, bool running, RunState state)
{
    VGPUPCIState *s = opaque;
    struct vgpu_local_export_reply r;
    Error *err = NULL;

    if (!running || !s->mig_held) {
        return;
    }
    s->mig_held = false;
    if (vgpu_export_op(s, VGPU_LOCAL_EXPORT_RESUME, 0, -1, NULL, &r, &err)) {
        warn_report_err(err);
        vgpu_lost(s, "vgpud did not resume the VM after its migration");
    }
}

/* Destination: hand vgpud a stream to import the VM from (IMPORT). */
static int vgpu_load_connect(VGPUPCIState *s)
{
    struct vgpu_local_import im = {
        .protocol_version = VGPU_LOCAL_PROTOCOL_VERSION,
        .protocol_minor = VGPU_LOCAL_PROTOCOL_MINOR,
    };
    Error *err = NULL;
    int pair[2], sock, ret;

    sock = vgpu_connect(s->socket_path, &err);
    if (sock < 0) {
        error_report_err(err);
        return -ECONNREFUSED;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
        ret = -errno;
        close(sock);
        return ret;
    }
    pstrcpy(im.vm_name, sizeof(im.vm_name), s->vm_name);
    ret = vgpu_send(sock, VGPU_LOCAL_IMPORT, 1, 0, &im, sizeof(im), &pair[1],
                    1, s->timeout_ms);
    close(pair[1]);
    if (ret) {
        error_report("vgpu-pci '%s': IMPORT to vgpud at '%s' failed: %s",
                     s->vm_name, s->socket_path, strerror(-ret));
        close(pair[0]);
        close(sock);
        return ret;
    }
    s->mig_import = sock;
    s->mig_stream = pair[0];
    return 0;
}

/* Destination: vgpud's verdict on the stream (it ends the connection). */
static int vgpu_load_verdict(VGPUPCIState *s, int timeout_ms)
{
    VGPUMessage m;
    int err = vgpu_recv(s->mig_import, &m, timeout_ms);

    close(s->mig_import);
    s->mig_import = -1;
    if (err) {
        error_report("vgpu-pci '%s': vgpud at '%s' did not confirm the "
                     "incoming VM: %s", s->vm_name, s->socket_path,
                     strerror(-err));
        return err;
    }
    vgpu_message_close_fds(&m);
    if (!vgpu_message_is(&m, VGPU_LOCAL_IMPORT, true,
                         sizeof(struct vgpu_local_import_reply), 0)) {
        error_report("vgpu-pci '%s': vgpud sent a malformed IMPORT reply",
                     s->vm_name);
        return -EPROTO;
    }
    if (m.payload.import_reply.status) {
        m.payload.import_reply.message[VGPU_LOCAL_MESSAGE_MAX - 1] = '\0';
        error_report("vgpu-pci '%s': vgpud at '%s' refused the incoming VM: "
                     "%s", s->vm_name, s->socket_path,
                     m.payload.import_reply.message);
        return m.payload.import_reply.status < 0 ?
               m.payload.import_reply.status : -EPROTO;
    }
    return 0;
}

/* Destination: write one frame to vgpud's import. */
static int vgpu_load_write(VGPUPCIState *s, const uint8_t *buf, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t n = send(s->mig_stream, buf + off, len - off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n > 0) {
            off += n;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int err = vgpu_wait_fd(s->mig_stream, POLLOUT,
                                   VGPU_MIG_IMPORT_TIMEOUT_MS);

            if (err) {
                return err;
            }
        } else if (n < 0 && errno != EINTR) {
            return -errno;
        }
    }
    return 0;
}

/* Destination: one part of the source's stream. */
static int vgpu_load_state(QEMUFile *f, void *opaque, int version_id)
{
    VGPUPCIState *s = opaque;
    g_autofree uint8_t *buf = NULL;
    int ret;

    if (version_id != 1 || !s->incoming || s->mig_imported) {
        error_report("vgpu-pci '%s': unexpected vGPU state in the migration "
                     "stream", s->vm_name);
        return -EINVAL;
    }
    if (s->mig_import < 0) {
        ret = vgpu_load_connect(s);
        if (ret) {
            return ret;
        }
    }
    for (;;) {
        uint32_t len = qemu_get_be32(f);

        ret = qemu_file_get_error(f);
        if (ret) {
            return ret;
        }
        if (len == VGPU_MIG_END_OF_PASS) {
            return 0;
        }
        if (len == VGPU_MIG_END_OF_STREAM) {
            close(s->mig_stream);
            s->mig_stream = -1;
            ret = vgpu_load_verdict(s, VGPU_MIG_IMPORT_TIMEOUT_MS);
            s->mig_imported = !ret;
            return ret;
        }
        if (len > VGPU_MIG_FRAME_MAX) {
            error_report("vgpu-pci '%s': a vGPU frame of %u bytes in the "
                         "migration stream", s->vm_name, len);
            return -EINVAL;
        }
        if (!buf) {
            buf = g_malloc(VGPU_MIG_FRAME_MAX);
        }
        if (qemu_get_buffer(f, buf, len) != len) {
            return qemu_file_get_error(f) ?: -EIO;
        }
        ret = vgpu_load_write(s, buf, len);
        if (ret) {
            /* vgpud stopped reading: it refused the VM, and says why */
            close(s->mig_stream);
            s->mig_stream = -1;
            return vgpu_load_verdict(s, s->timeout_ms) ?: ret;
        }
    }
}

static int vgpu_load_cleanup(void *opaque)
{
    vgpu_mig_close(opaque);
    return 0;
}

static const SaveVMHandlers vgpu_savevm_handlers = {
    .is_active = vgpu_save_is_active,
    .save_setup = vgpu_save_setup,
    .save_live_pending = vgpu_save_pending,
    .save_live_iterate = vgpu_save_iterate,
    .save_live_complete_precopy = vgpu_save_complete,
    .save_cleanup = vgpu_save_cleanup,
    .load_state = vgpu_load_state,
    .load_cleanup = vgpu_load_cleanup,
};

/*
 * Destination, after the device's PCI state (which the stream carries
 * after the vGPU's section): adopt the VM vgpud imported.
 */
static int vgpu_pci_post_load(void *opaque, int version_id)
{
    VGPUPCIState *s = opaque;
    uint32_t irq_mask = s->irq_mask;
    Error *err = NULL;

    if (!s->incoming) {
        return 0;
    }
    s->incoming = false;
    if (!s->mig_imported) {
        /* the source's vGPU was lost: so is this one, until a reset */
        s->lost = true;
        return 0;
    }
    s->mig_imported = false;
    if (!vgpu_attach(s, true, &err) || !vgpu_read_identity(s, &err)) {
        error_prepend(&err, "vgpu-pci '%s': cannot adopt the migrated VM: ",
                      s->vm_name);
        error_report_err(err);
        return -EIO;
    }
    s->irq_mask = irq_mask;
    if (kvm_msi_via_irqfd_enabled() && msix_enabled(PCI_DEVICE(s))) {
        vgpu_enable_irqfd(s);
    }
    return 0;
}

static const VMStateDescription vgpu_pci_vmstate = {
    .name = TYPE_VGPU_PCI,
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = vgpu_pci_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, VGPUPCIState),
        VMSTATE_MSIX(parent_obj, VGPUPCIState),
        VMSTATE_UINT32(irq_mask, VGPUPCIState),
        VMSTATE_UINT32(lost_irq_status, VGPUPCIState),
        VMSTATE_BOOL(intx_level, VGPUPCIState),
        VMSTATE_BOOL(lost, VGPUPCIState),
        VMSTATE_END_OF_LIST()
    }
};

/* --------------------------------------------------------------- device */

static bool vgpu_pci_setup(PCIDevice *pdev, Error **errp)
{
    VGPUPCIState *s = VGPU_PCI(pdev);
    unsigned i;
    size_t len;

    if (!s->socket_path) {
        s->socket_path = g_strdup(VGPU_PCI_DEFAULT_SOCKET);
    }
    if (!s->vm_name) {
        s->vm_name = g_strdup(qemu_name ? qemu_name : "");
    }
    len = strlen(s->vm_name);
    if (!len || len >= VGPU_LOCAL_NAME_MAX) {
        error_setg(errp, "vgpu-pci: the VM needs a name of 1 to %u "
                   "characters for vgpud: set -name NAME or "
                   "-device vgpu-pci,name=NAME", VGPU_LOCAL_NAME_MAX - 1);
        return false;
    }
    for (i = 0; i < len; i++) {
        if (s->vm_name[i] <= ' ' || s->vm_name[i] > '~') {
            error_setg(errp, "vgpu-pci: VM name '%s' has a character vgpud "
                       "does not take (printable ASCII, no spaces): set "
                       "-device vgpu-pci,name=NAME", s->vm_name);
            return false;
        }
    }
    if (s->profile && strlen(s->profile) >= VGPU_LOCAL_NAME_MAX) {
        error_setg(errp, "vgpu-pci: profile name '%s' is too long",
                   s->profile);
        return false;
    }
    if (!s->timeout_ms) {
        error_setg(errp, "vgpu-pci: timeout must be at least 1 ms");
        return false;
    }

    pci_config_set_interrupt_pin(pdev->config, 1);
    pci_set_word(pdev->config + PCI_SUBSYSTEM_VENDOR_ID,
                 VGPU_PCI_SUBSYSTEM_VENDOR_ID);
    pci_set_word(pdev->config + PCI_SUBSYSTEM_ID, VGPU_PCI_SUBSYSTEM_ID);

    memory_region_init_io(&s->bar0, OBJECT(s), &vgpu_bar0_ops, s,
                          "vgpu-pci.bar0", VGPU_BAR0_SIZE);
    pci_register_bar(pdev, VGPU_BAR0_INDEX, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->bar0);

    s->bar2_size = pow2ceil(VGPU_BAR2_SIZE);
    s->bar2_host = mmap(NULL, s->bar2_size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s->bar2_host == MAP_FAILED) {
        s->bar2_host = NULL;
        error_setg_errno(errp, errno, "vgpu-pci: cannot reserve BAR2");
        return false;
    }
    memory_region_init_io(&s->bar2, OBJECT(s), &vgpu_bar2_ops, s,
                          "vgpu-pci.bar2", s->bar2_size);
    for (i = 0; i < VGPU_MAX_CHANNELS; i++) {
        g_autofree char *name = g_strdup_printf("vgpu-pci.window%u", i);

        s->window[i].dev = s;
        memory_region_init_io(&s->window[i].blocker, OBJECT(s),
                              &vgpu_window_ops, &s->window[i], name,
                              VGPU_CHANNEL_WINDOW_STRIDE);
    }
    pci_register_bar(pdev, VGPU_BAR2_INDEX,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &s->bar2);

    memory_region_init(&s->msix_bar, OBJECT(s), "vgpu-pci.msix",
                       VGPU_PCI_MSIX_BAR_SIZE);
    pci_register_bar(pdev, VGPU_PCI_MSIX_BAR, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->msix_bar);
    /* MSI first: capabilities are prepended, so the list reads 0x40, 0x50
     * as the mdev path's does */
    if (msi_init(pdev, VGPU_PCI_CAP_MSI, 1, true, false, errp) < 0) {
        return false;
    }
    if (msix_init(pdev, VGPU_MSIX_VECTORS, &s->msix_bar, VGPU_PCI_MSIX_BAR,
                  VGPU_PCI_MSIX_TABLE_OFFSET, &s->msix_bar, VGPU_PCI_MSIX_BAR,
                  VGPU_PCI_MSIX_PBA_OFFSET, VGPU_PCI_CAP_MSIX, errp) < 0) {
        return false;
    }
    for (i = 0; i < VGPU_MSIX_VECTORS; i++) {
        msix_vector_use(pdev, i);
    }

    if (event_notifier_init(&s->kick, 0) < 0) {
        error_setg_errno(errp, errno, "vgpu-pci: eventfd");
        return false;
    }
    for (i = 0; i < VGPU_MSIX_VECTORS; i++) {
        s->irq[i].dev = s;
        s->irq[i].vector = i;
        if (event_notifier_init(&s->irq[i].notifier, 0) < 0) {
            error_setg_errno(errp, errno, "vgpu-pci: eventfd");
            return false;
        }
    }
    /* the doorbell never reaches QEMU's handler: it kicks vgpud directly */
    memory_region_add_eventfd(&s->bar0, VGPU_REG_MAILBOX_DOORBELL, 4, false, 0,
                              &s->kick);

    s->doorbell_eventfd = true;

    register_savevm_live(TYPE_VGPU_PCI, VMSTATE_INSTANCE_ID_ANY, 1,
                         &vgpu_savevm_handlers, s);
    vgpu_tcg_dirty_register(s);
    s->vm_change = qemu_add_vm_change_state_handler(vgpu_vm_change, s);
    if (runstate_check(RUN_STATE_INMIGRATE)) {
        /* -incoming: the VM comes from the source's vgpud with the
         * migration; vgpu_pci_post_load adopts it */
        s->incoming = true;
        return true;
    }
    return vgpu_attach(s, false, errp) && vgpu_read_identity(s, errp);
}

static void vgpu_pci_exit(PCIDevice *pdev);

static void vgpu_pci_realize(PCIDevice *pdev, Error **errp)
{
    if (!vgpu_pci_setup(pdev, errp)) {
        vgpu_pci_exit(pdev);
    }
}

/* Everything realize may have set up; also the failure path of realize. */
static void vgpu_pci_exit(PCIDevice *pdev)
{
    VGPUPCIState *s = VGPU_PCI(pdev);
    unsigned i;

    vgpu_detach(s);
    vgpu_disable_irqfd(s);
    s->lost = true; /* wakes and releases anything still waiting */
    if (s->bar2_host) {
        vgpu_reset_bar2(s);
    }
    if (s->vm_change) {
        qemu_del_vm_change_state_handler(s->vm_change);
        s->vm_change = NULL;
        unregister_savevm(NULL, TYPE_VGPU_PCI, s);
    }
    vgpu_tcg_dirty_unregister(s);
    vgpu_mig_close(s);
    if (s->doorbell_eventfd) {
        memory_region_del_eventfd(&s->bar0, VGPU_REG_MAILBOX_DOORBELL, 4,
                                  false, 0, &s->kick);
        s->doorbell_eventfd = false;
    }
    if (event_notifier_get_fd(&s->kick) >= 0) {
        event_notifier_cleanup(&s->kick);
        event_notifier_init_fd(&s->kick, -1);
    }
    for (i = 0; i < VGPU_MSIX_VECTORS; i++) {
        if (event_notifier_get_fd(&s->irq[i].notifier) >= 0) {
            event_notifier_cleanup(&s->irq[i].notifier);
            event_notifier_init_fd(&s->irq[i].notifier, -1);
        }
    }
    msix_uninit(pdev, &s->msix_bar, &s->msix_bar);
    msi_uninit(pdev);
    vgpu_keepalive_join(s);
}

/*
 * A system or PCI reset: the guest driver starts over, so vgpud gets a fresh
 * instance (DETACH frees everything the VM had, ATTACH makes a new one).
 * A reset of an instance the guest has not used since it was attached
 * (machine start, hotplug, the several resets of one system reset) keeps
 * it: a guest uses the device by reading BAR0 (every driver checks
 * VGPU_REG_MAGIC first) or by making vgpud map memory into BAR2. A lost
 * device tries to re-attach: vgpud may be back.
 */
static void vgpu_pci_reset(DeviceState *dev)
{
    VGPUPCIState *s = VGPU_PCI(dev);
    Error *err = NULL;

    if (s->attached && s->fresh) {
        return;
    }
    vgpu_detach(s);
    vgpu_reset_bar2(s);
    vgpu_disable_irqfd(s); /* the reset turned MSI-X off */
    if (s->intx_level) {
        s->intx_level = false;
        pci_set_irq(PCI_DEVICE(s), 0);
    }
    if (s->incoming) {
        return; /* the VM arrives with the migration (vgpu_pci_post_load) */
    }
    if (!vgpu_attach(s, false, &err)) {
        s->lost = true;
        s->lost_irq_status = 0;
        warn_report_err(err);
        warn_report("vgpu-pci '%s': the vGPU stays lost until the next reset",
                    s->vm_name);
    }
}

static void vgpu_pci_instance_init(Object *obj)
{
    VGPUPCIState *s = VGPU_PCI(obj);
    unsigned i;

    s->sock = -1;
    s->backend = -1;
    s->mig_stream = -1;
    s->mig_import = -1;
    event_notifier_init_fd(&s->kick, -1);
    for (i = 0; i < VGPU_MSIX_VECTORS; i++) {
        event_notifier_init_fd(&s->irq[i].notifier, -1);
        s->irq[i].virq = -1;
    }
    object_property_add_uint32_ptr(obj, "x-vm-id", &s->vm_id,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "x-window-swaps", &s->stats.swaps,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "x-window-blocked-ns-total",
                                   &s->stats.blocked_ns_total,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "x-window-blocked-ns-max",
                                   &s->stats.blocked_ns_max,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "x-window-waits", &s->stats.waits,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "x-window-wait-ns-total",
                                   &s->stats.wait_ns_total,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "x-window-wait-ns-max",
                                   &s->stats.wait_ns_max, OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "x-migration-vm-bytes",
                                   &s->mig_vm_bytes, OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "x-migration-bytes-sent",
                                   &s->mig_bytes_sent, OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "x-migration-precopy-bytes",
                                   &s->mig_precopy_bytes, OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "x-migration-downtime-ns",
                                   &s->mig_downtime_ns, OBJ_PROP_FLAG_READ);
    object_property_add_uint32_ptr(obj, "x-migration-rounds",
                                   &s->mig_rounds, OBJ_PROP_FLAG_READ);
    qemu_mutex_init(&s->sock_lock);
    qemu_mutex_init(&s->keepalive_lock);
    qemu_cond_init(&s->keepalive_cond);
    qemu_cond_init(&s->window_cond);
    qemu_cond_init(&s->barrier_cond);
    QLIST_INIT(&s->regions);
}

static void vgpu_pci_instance_finalize(Object *obj)
{
    VGPUPCIState *s = VGPU_PCI(obj);

    if (s->bar2_host) {
        munmap(s->bar2_host, s->bar2_size);
    }
    g_free(s->barrier_owed);
    g_free(s->cpu_waiting);
    qemu_cond_destroy(&s->barrier_cond);
    qemu_cond_destroy(&s->window_cond);
    qemu_cond_destroy(&s->keepalive_cond);
    qemu_mutex_destroy(&s->keepalive_lock);
    qemu_mutex_destroy(&s->sock_lock);
}

static Property vgpu_pci_properties[] = {
    DEFINE_PROP_STRING("socket", VGPUPCIState, socket_path),
    DEFINE_PROP_STRING("name", VGPUPCIState, vm_name),
    DEFINE_PROP_STRING("profile", VGPUPCIState, profile),
    DEFINE_PROP_UINT32("timeout", VGPUPCIState, timeout_ms,
                       VGPU_PCI_DEFAULT_TIMEOUT_MS),
    DEFINE_PROP_UINT32("keepalive", VGPUPCIState, keepalive_ms,
                       VGPU_PCI_DEFAULT_KEEPALIVE_MS),
    DEFINE_PROP_END_OF_LIST(),
};

static void vgpu_pci_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = vgpu_pci_realize;
    k->exit = vgpu_pci_exit;
    k->config_write = vgpu_pci_write_config;
    k->vendor_id = VGPU_PCI_VENDOR_ID;
    k->device_id = VGPU_PCI_DEVICE_ID;
    k->revision = VGPU_PCI_REVISION;
    k->class_id = VGPU_PCI_CLASS >> 8;
    dc->reset = vgpu_pci_reset;
    dc->vmsd = &vgpu_pci_vmstate;
    dc->desc = "mediated vGPU backed by vgpud (local socket protocol)";
    device_class_set_props(dc, vgpu_pci_properties);
    object_class_property_set_description(klass, "socket",
        "vgpud's local socket (default " VGPU_PCI_DEFAULT_SOCKET ")");
    object_class_property_set_description(klass, "name",
        "the VM's name in vgpud and vgpuctl (default: -name)");
    object_class_property_set_description(klass, "profile",
        "vgpud profile to attach with (default: vgpud's default profile)");
    object_class_property_set_description(klass, "timeout",
        "ms to wait for vgpud's answers before the device is lost");
    object_class_property_set_description(klass, "keepalive",
        "ms between keepalive reads while attached, below vgpud's "
        "idle_timeout_ms (0 = none)");
    set_bit(DEVICE_CATEGORY_DISPLAY, dc->categories);
}

static const TypeInfo vgpu_pci_info = {
    .name = TYPE_VGPU_PCI,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(VGPUPCIState),
    .instance_init = vgpu_pci_instance_init,
    .instance_finalize = vgpu_pci_instance_finalize,
    .class_init = vgpu_pci_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void vgpu_pci_register_types(void)
{
    type_register_static(&vgpu_pci_info);
}

type_init(vgpu_pci_register_types)
