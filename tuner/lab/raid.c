/* iotuner's modelled hardware RAID set: an nbdkit plugin, compiled by nbdkit's cc plugin at
 * `lab up`. One block device, as a RAID controller shows the kernel, over `members` modelled
 * hard disks (hdd_model.h, each with its own head, queue and platter phase).
 *
 * Parameters (key=value; checked again in tuner/lab/raid.py, which is what users write):
 *   file        the backing file of the array's data (a read returns what was written;
 *               parity is modelled in time, not stored)
 *   size        the array's capacity in bytes (its data, not its parity)
 *   level       0 (striping) or 5 (striping with rotating parity)
 *   members     drives in the set: 2-16 for level 0, 3-16 for level 5
 *   stripe_kib  the stripe unit: the bytes one member holds of one stripe (a chunk)
 *   stats       a file the plugin creates and maps: member commands counted (below)
 *   rpm ... seed  every member's mechanics (hdd_model.h); member i's phase is seed + i's
 *   eio_*, slow_* faults (disk.h): eio over the array's bytes, slow on every member
 *   bus_file, bus_mbps  every member command's bytes cross this bus (disk.h)
 *
 * Layout, with unit U = stripe_kib KiB, N members, D data units per stripe (N at level 0,
 * N - 1 at level 5): array byte o is in stripe s = o / (D U), data unit j = (o mod D U) / U;
 *   level 0: member j, at member offset s U + (o mod U)
 *   level 5: parity on member p = (N - 1) - (s mod N) (left-symmetric, as Linux md's default),
 *            data unit j on member (p + 1 + j) mod N, at member offset s U + (o mod U)
 * Each member holds ceil(size / (D U)) units.
 *
 * A request becomes member commands, pieces contiguous on a member merged into one:
 *   read               the data pieces, all members at once
 *   level 0 write      the data pieces
 *   level 5 write, stripe by stripe:
 *     whole stripe     write its D data units and its parity unit: no reads
 *     partial stripe   read-modify-write: read the old data pieces and the old parity (over
 *                      the span the pieces cover within a unit), then write the new data
 *                      and parity: a small write costs 2 reads + 2 writes
 *   all the reads of a request are issued at once, then all its writes, once every read
 *   is done.
 * The request is done when its last member command is (and across the bus, if any).
 *
 * Stats: little-endian uint64 words; 0 members, 1 read requests, 2 write requests,
 * 3 stripes written whole, 4 stripes read-modify-written, 5-7 zero; then for member i at
 * 8 + 4 i: reads, writes, bytes read, bytes written (member commands, after merging).
 */
#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "disk.h"      /* the clock, number parsing, faults, the bus */
#include "hdd_model.h" /* the members */

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL
#define MAX_MEMBERS 16
#define STATS_WORDS (8 + 4 * MAX_MEMBERS)

static const char *stats_file;
static int64_t stripe_kib = 64;
static int level = -1, members = 4;
static struct drive member[MAX_MEMBERS];
static uint64_t unit, data_units;
static uint64_t *stats;

static void
count (int word, uint64_t n)
{
  __atomic_fetch_add (&stats[word], n, __ATOMIC_RELAXED);
}

/* The member commands of one phase, pieces contiguous on a member merged. */
struct plan {
  struct command *cmds;
  int n;
  int last[MAX_MEMBERS];
};

static void
plan_init (struct plan *p, struct command *cmds)
{
  p->cmds = cmds;
  p->n = 0;
  for (int m = 0; m < MAX_MEMBERS; m++)
    p->last[m] = -1;
}

static void
add (struct plan *p, int m, uint64_t off, uint64_t len, int write)
{
  if (p->last[m] >= 0) {
    struct command *c = &p->cmds[p->last[m]];
    if (c->off + c->len == off) {
      c->len += (uint32_t) len;
      return;
    }
  }
  p->last[m] = p->n;
  p->cmds[p->n++] = (struct command) {
    .drive = &member[m], .off = off, .len = (uint32_t) len, .write = write
  };
}

/* Queue a phase's commands, arrived at `arrival`, wait for them, and count them. */
static void
run (struct plan *p, double arrival)
{
  if (p->n == 0)
    return;
  for (int i = 0; i < p->n; i++) {
    int m = (int) (p->cmds[i].drive - member);
    int w = p->cmds[i].write;
    count (8 + 4 * m + w, 1);
    count (10 + 4 * m + w, p->cmds[i].len);
  }
  run_commands (p->cmds, p->n, arrival);
}

/* Plan [off, off + len) stripe by stripe into reads and writes. */
static void
plan_request (uint64_t off, uint64_t len, int write, struct plan *reads, struct plan *writes)
{
  uint64_t dps = data_units * unit, end = off + len;
  for (uint64_t s = off / dps; s * dps < end; s++) {
    uint64_t a = off > s * dps ? off : s * dps;
    uint64_t b = end < (s + 1) * dps ? end : (s + 1) * dps;
    int parity = level == 5 ? (members - 1) - (int) (s % (uint64_t) members) : -1;
    int whole = a == s * dps && b == (s + 1) * dps;
    uint64_t lo = unit, hi = 0;
    for (uint64_t j = (a - s * dps) / unit; j * unit + s * dps < b; j++) {
      uint64_t ua = a > s * dps + j * unit ? a : s * dps + j * unit;
      uint64_t ub = b < s * dps + (j + 1) * unit ? b : s * dps + (j + 1) * unit;
      int m = level == 5 ? (parity + 1 + (int) j) % members : (int) j;
      uint64_t within = ua - (s * dps + j * unit);
      if (!write)
        add (reads, m, s * unit + within, ub - ua, 0);
      else {
        if (level == 5 && !whole)
          add (reads, m, s * unit + within, ub - ua, 0);
        add (writes, m, s * unit + within, ub - ua, 1);
      }
      if (within < lo)
        lo = within;
      if (within + (ub - ua) > hi)
        hi = within + (ub - ua);
    }
    if (write && level == 5) {
      if (!whole)
        add (reads, parity, s * unit + lo, hi - lo, 0);
      add (writes, parity, s * unit + lo, hi - lo, 1);
      count (whole ? 3 : 4, 1);
    }
  }
}

static int
perform (void *buf, const void *wbuf, uint32_t count_, uint64_t offset)
{
  if (fault_eio (offset, count_)) {
    nbdkit_set_error (EIO); /* not logged: a reader retrying would fill the log */
    return -1;
  }
  double arrival = now (); /* the copy below is inside the modelled time */
  if (disk_move (buf, wbuf, count_, offset) < 0)
    return -1;
  /* At most members + 1 pieces per stripe touched in each phase. */
  uint64_t stripes = count_ / (data_units * unit) + 2;
  size_t most = (size_t) (stripes * (uint64_t) (members + 1));
  struct command *cmds = malloc (2 * most * sizeof *cmds);
  if (cmds == NULL) {
    nbdkit_set_error (ENOMEM);
    return -1;
  }
  struct plan reads, writes;
  plan_init (&reads, cmds);
  plan_init (&writes, cmds + most);
  count (wbuf ? 2 : 1, 1);
  plan_request (offset, count_, wbuf != NULL, &reads, &writes);
  run (&reads, arrival);
  run (&writes, reads.n ? now () : arrival); /* a read-modify-write's writes wait for reads */
  free (cmds);
  return 0;
}

static int
raid_config (const char *key, const char *value)
{
  int taken = disk_config (key, value);
  if (taken == 1)
    taken = drive_config (key, value);
  if (taken <= 0)
    return taken;
  if (strcmp (key, "stats") == 0) {
    stats_file = value;
    return 0;
  }
  if (strcmp (key, "level") == 0)
    return nbdkit_parse_int ("level", value, &level);
  if (strcmp (key, "members") == 0)
    return nbdkit_parse_int ("members", value, &members);
  if (strcmp (key, "stripe_kib") == 0)
    return nbdkit_parse_int64_t ("stripe_kib", value, &stripe_kib);
  nbdkit_error ("unknown parameter '%s'", key);
  return -1;
}

static int
raid_config_complete (void)
{
  if (file == NULL || stats_file == NULL || size <= 0) {
    nbdkit_error ("file=, stats= and size= are required");
    return -1;
  }
  if ((level != 0 && level != 5) || members < (level == 5 ? 3 : 2) ||
      members > MAX_MEMBERS || stripe_kib < 4 || stripe_kib > 4096) {
    nbdkit_error ("parameters out of range");
    return -1;
  }
  unit = (uint64_t) stripe_kib * 1024;
  data_units = (uint64_t) (level == 5 ? members - 1 : members);
  uint64_t stripes = ((uint64_t) size + data_units * unit - 1) / (data_units * unit);
  if (drive_geometry ((int64_t) (stripes * unit)) < 0 || fault_config_complete () < 0)
    return -1;
  for (int m = 0; m < members; m++)
    drive_init (&member[m], m);
  return 0;
}

static int
raid_get_ready (void)
{
  if (disk_open_file () < 0)
    return -1;
  int sfd = open (stats_file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (sfd < 0 || ftruncate (sfd, STATS_WORDS * sizeof (uint64_t)) < 0) {
    nbdkit_error ("stats %s: %m", stats_file);
    return -1;
  }
  void *map = mmap (NULL, STATS_WORDS * sizeof (uint64_t), PROT_READ | PROT_WRITE,
                    MAP_SHARED, sfd, 0);
  close (sfd);
  if (map == MAP_FAILED) {
    nbdkit_error ("mmap %s: %m", stats_file);
    return -1;
  }
  stats = map;
  stats[0] = (uint64_t) members;
  clock_start ();
  return bus_open ();
}

static int
raid_flush (void *handle, uint32_t flags)
{
  return 0; /* write cache off, on the controller and its members */
}

static struct nbdkit_plugin plugin = {
  .name = "iotuner-raid",
  .version = "1",
  .magic_config_key = "file",
  .config = raid_config,
  .config_complete = raid_config_complete,
  .get_ready = raid_get_ready,
  .open = disk_open,
  .get_size = disk_get_size,
  .can_multi_conn = disk_can_multi_conn,
  .pread = disk_pread,
  .pwrite = disk_pwrite,
  .flush = raid_flush,
};

NBDKIT_REGISTER_PLUGIN (plugin)
