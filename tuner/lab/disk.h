/* What iotuner's modelled disks (hdd.c, ssd.c, raid.c) share: the clock, sleeping to a deadline,
 * parameter parsing, and faults. Included by each plugin (nbdkit's cc plugin compiles one
 * file; `#include "disk.h"` finds this one beside it), never compiled alone.
 *
 * Times are seconds on CLOCK_MONOTONIC since t_epoch (whole seconds, so the HDD's platter
 * phase stays its seed's).
 *
 * Faults (parameters, checked again in tuner/lab/faults.py, which is what users write):
 *   eio_start, eio_length  the bytes [start, start + length) are bad: a read or write that
 *                          touches any of them fails with EIO at once, moving no data and
 *                          taking no modelled time (a real drive retries first; its timeouts
 *                          are not modelled); length 0: no bad region
 *   slow_after_s, slow_for_s, slow_factor
 *                          from slow_after_s after the server is ready, for slow_for_s, every
 *                          command that starts service is slow_factor times as long (the
 *                          model's own time, from its start to done); factor 1: never slow
 *
 * A shared bus (parameters bus_file, bus_mbps; several servers name the same bus_file):
 * every command's bytes cross the bus once its media time is over, one transfer at a time
 * at bus_mbps, in the order the servers reach it: done = max(media done, bus free) +
 * len / bus_mbps. The bus's "free at" time (nanoseconds on CLOCK_MONOTONIC, shared by
 * every process on the machine) is one 64-bit word at the start of bus_file, mapped by
 * every server on the bus and moved by compare-and-swap: no lock, so a server killed with
 * SIGKILL leaves nothing held.
 *
 * Every plugin's file= and size= (the backing file, the capacity) are parsed here too
 * (disk_config), with the faults' and the bus's keys; the plugin parses only its own.
 *
 * The nbdkit callbacks every plugin shares (disk_open ... disk_pwrite) are at the end: one
 * device behind every connection, each read or write handed to the plugin's `perform`.
 */
#ifndef IOTUNER_DISK_H
#define IOTUNER_DISK_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int64_t size = -1; /* the capacity every modelled disk presents, in bytes */
static const char *file;  /* the backing file: every byte the disk holds is really stored */
static int fd = -1;

/* Each plugin's own: move the data and wait as long as its model says (hdd.c, ssd.c, raid.c). */
static int perform (void *buf, const void *wbuf, uint32_t count, uint64_t offset);

static double t_epoch;
static int64_t eio_start, eio_length;
static double slow_after_s, slow_for_s, slow_factor = 1;
static double t_ready; /* when the server became ready, on the model's clock */
static const char *bus_file;
static double bus_mbps;
static int64_t *bus_free_ns; /* mapped from bus_file; NULL: on no bus */

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9 - t_epoch;
}

/* Start the model's clock: called once, from get_ready. */
static void
clock_start (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  t_epoch = (double) ts.tv_sec;
  t_ready = now ();
}

static void
sleep_until (double t)
{
  double abs = t + t_epoch;
  struct timespec ts;
  ts.tv_sec = (time_t) abs;
  ts.tv_nsec = (long) ((abs - (double) ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

static int
parse_double (const char *key, const char *value, double *out, double lo, double hi)
{
  char *end;
  errno = 0;
  double v = strtod (value, &end);
  if (errno || end == value || *end || !(v >= lo && v <= hi)) {
    nbdkit_error ("%s must be a number from %g to %g, got '%s'", key, lo, hi, value);
    return -1;
  }
  *out = v;
  return 0;
}

/* A fault's key=value: 0 taken, -1 bad value, 1 not a fault's key. */
static int
fault_config (const char *key, const char *value)
{
  if (strcmp (key, "eio_start") == 0)
    return nbdkit_parse_int64_t (key, value, &eio_start);
  if (strcmp (key, "eio_length") == 0)
    return nbdkit_parse_int64_t (key, value, &eio_length);
  if (strcmp (key, "slow_after_s") == 0)
    return parse_double (key, value, &slow_after_s, 0, 86400);
  if (strcmp (key, "slow_for_s") == 0)
    return parse_double (key, value, &slow_for_s, 0, 86400);
  if (strcmp (key, "slow_factor") == 0)
    return parse_double (key, value, &slow_factor, 1, 1000);
  return 1;
}

/* A bus's key=value: 0 taken, -1 bad value, 1 not a bus key. */
static int
bus_config (const char *key, const char *value)
{
  if (strcmp (key, "bus_file") == 0) {
    bus_file = value;
    return 0;
  }
  if (strcmp (key, "bus_mbps") == 0)
    return parse_double (key, value, &bus_mbps, 1, 100000);
  return 1;
}

/* A key every modelled disk takes (faults, bus, file, size): 0 taken, -1 bad value, 1 not
 * one of these (the plugin's own, then). */
static int
disk_config (const char *key, const char *value)
{
  int taken = fault_config (key, value);
  if (taken == 1)
    taken = bus_config (key, value);
  if (taken != 1)
    return taken;
  if (strcmp (key, "file") == 0) {
    file = value;
    return 0;
  }
  if (strcmp (key, "size") == 0)
    return (size = nbdkit_parse_size (value)) < 0 ? -1 : 0;
  return 1;
}

/* Open the backing file (from get_ready). */
static int
disk_open_file (void)
{
  fd = open (file, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    nbdkit_error ("open %s: %m", file);
    return -1;
  }
  return 0;
}

/* Move a read's or write's data to or from the backing file: 0, or -1 with the error set. */
static int
disk_move (void *buf, const void *wbuf, uint32_t count, uint64_t offset)
{
  ssize_t moved = wbuf ? pwrite (fd, wbuf, count, (off_t) offset)
                       : pread (fd, buf, count, (off_t) offset);
  if (moved != (ssize_t) count) {
    nbdkit_error ("%s %s at %llu: %s", wbuf ? "pwrite" : "pread", file,
                  (unsigned long long) offset, moved < 0 ? strerror (errno) : "short");
    nbdkit_set_error (moved < 0 ? errno : EIO);
    return -1;
  }
  return 0;
}

/* Map the bus's word (from get_ready); 0 on no bus or once mapped. */
static int
bus_open (void)
{
  if (bus_file == NULL && bus_mbps == 0)
    return 0;
  if (bus_file == NULL || bus_mbps == 0) {
    nbdkit_error ("bus_file= and bus_mbps= go together");
    return -1;
  }
  int bfd = open (bus_file, O_RDWR | O_CLOEXEC);
  if (bfd < 0) {
    nbdkit_error ("open %s: %m", bus_file);
    return -1;
  }
  void *map = mmap (NULL, sizeof (int64_t), PROT_READ | PROT_WRITE, MAP_SHARED, bfd, 0);
  close (bfd);
  if (map == MAP_FAILED) {
    nbdkit_error ("mmap %s: %m", bus_file);
    return -1;
  }
  bus_free_ns = map;
  return 0;
}

/* When `len` bytes whose media time ends at t (model clock) are across the bus. */
static double
bus_cross (double t, uint32_t len)
{
  if (bus_free_ns == NULL)
    return t;
  int64_t ready = (int64_t) ((t + t_epoch) * 1e9);
  int64_t length = (int64_t) (len / (bus_mbps * 1e6) * 1e9);
  int64_t free_at = __atomic_load_n (bus_free_ns, __ATOMIC_ACQUIRE), end;
  do
    end = (free_at > ready ? free_at : ready) + length;
  while (!__atomic_compare_exchange_n (bus_free_ns, &free_at, end, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE));
  return end * 1e-9 - t_epoch;
}

/* 0 if the fault parameters fit the disk's `size` bytes. */
static int
fault_config_complete (void)
{
  if (eio_start < 0 || eio_length < 0 || eio_length > size || eio_start > size - eio_length) {
    nbdkit_error ("eio_start/eio_length outside the disk");
    return -1;
  }
  return 0;
}

/* True if [off, off + len) touches the bad region. */
static int
fault_eio (uint64_t off, uint32_t len)
{
  return eio_length > 0 && (int64_t) off < eio_start + eio_length &&
         (int64_t) (off + len) > eio_start;
}

/* How much longer a command that starts at s and would take `duration` takes. */
static double
fault_extra (double s, double duration)
{
  double from = t_ready + slow_after_s;
  if (slow_factor == 1 || s < from || s >= from + slow_for_s)
    return 0;
  return duration * (slow_factor - 1);
}

/* The callbacks every modelled disk's plugin registers as they are. */
static void *
disk_open (int readonly)
{
  return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t
disk_get_size (void *handle)
{
  return size;
}

static int
disk_can_multi_conn (void *handle)
{
  return 1; /* one device behind every connection; flush has nothing to flush */
}

static int
disk_pread (void *handle, void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
  return perform (buf, NULL, count, offset);
}

static int
disk_pwrite (void *handle, const void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
  return perform (NULL, buf, count, offset);
}

#endif
