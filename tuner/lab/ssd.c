/* iotuner's modelled solid-state disk: an nbdkit plugin, compiled by nbdkit's cc plugin at
 * `lab up`.
 *
 * It stores every byte in a backing file (on /dev/shm) and completes each request when a
 * model of a flash drive says it would. Times are seconds on CLOCK_MONOTONIC (disk.h).
 *
 * Parameters (key=value; checked again in tuner/lab/ssd.py, which is what users write):
 *   file        the backing file (data really stored: a read returns what was written)
 *   size        capacity in bytes
 *   read_us     flash time of one read command (the first page's sense; a larger command's
 *               further pages are read in parallel on other dies, under its transfer)
 *   write_us    flash time of one write command (programming into the drive's buffer)
 *   mbps        the interface: every command's bytes cross it at this rate (MB/s, 10^6
 *               bytes/s), one command at a time, shared by all channels
 *   channels    commands in service at once (flash channels / dies working in parallel)
 *   op_bytes    the over-provisioned area: once more than op_bytes have been written since
 *               the server started, every write's flash time is gc_factor times write_us
 *               (garbage collection: erasing and moving valid pages before programming)
 *   gc_factor   see op_bytes
 *   route_us    what the lab's route (loop worker, FUSE, nbdfuse, the socket) adds to a command
 *               outside the model, measured at depth 1 on the development VM: each command is
 *               answered this much before its modelled end (never before it arrived), so the
 *               kernel sees the modelled time; the channels stay busy until the modelled end
 *   eio_*, slow_* faults (disk.h)
 *   bus_file, bus_mbps
 *               a bus shared with other modelled disks (disk.h): a command's bytes cross it
 *               after its transfer; reserved when the command is scheduled (at its arrival)
 *
 * A command arriving at a takes the channel that frees first (c, free at f):
 *   start     s = max(a, f)
 *   flash     s + L,   L = read_us, write_us, or write_us * gc_factor past op_bytes
 *   transfer  begins at x = max(s + L, interface free), ends at done = x + len / mbps
 *   slow      done = s + (done - s) * slow_factor inside the slow period
 * the channel and the interface are busy until done; the answer goes at done - route_us. So
 * at depth 1 a 4 KiB read takes
 * read_us + 4096 / mbps; up to `channels` commands overlap, so IOPS grow with the queue
 * depth up to the channel count and then flatten; large commands run at mbps.
 *
 * Deterministic: nothing is random (there is nothing to seed); what varies from run to run
 * is only when requests arrive.
 */
#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "disk.h" /* the clock, number parsing, faults */

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL
#define MAX_CHANNELS 64

static double read_us = 2000, write_us = 3000, mbps = 400, gc_factor = 4, route_us = 400;
static int channels = 4;
static int64_t op_bytes = 256 << 20;

static double channel_free[MAX_CHANNELS];
static double interface_free;
static double written; /* bytes since the server started */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* When to answer a command of `len` bytes arriving now; the channels move on as the model
 * says. */
static double
schedule (uint32_t len, int write)
{
  double a = now ();
  pthread_mutex_lock (&lock);
  int c = 0;
  for (int i = 1; i < channels; i++)
    if (channel_free[i] < channel_free[c])
      c = i;
  double s = a > channel_free[c] ? a : channel_free[c];
  double flash = (write ? write_us : read_us) / 1e6;
  if (write) {
    if (written > (double) op_bytes)
      flash *= gc_factor;
    written += len;
  }
  double x = s + flash > interface_free ? s + flash : interface_free;
  double done = x + len / (mbps * 1e6);
  done += fault_extra (s, done - s);
  channel_free[c] = done;
  interface_free = done;
  done = bus_cross (done, len);
  pthread_mutex_unlock (&lock);
  double answer = done - route_us / 1e6;
  return answer > a ? answer : a;
}

/* The data moves first, inside the modelled time: the copy costs the model nothing. */
static int
perform (void *buf, const void *wbuf, uint32_t count, uint64_t offset)
{
  if (fault_eio (offset, count)) {
    nbdkit_set_error (EIO); /* not logged: a reader retrying would fill the log */
    return -1;
  }
  double done = schedule (count, wbuf != NULL);
  if (disk_move (buf, wbuf, count, offset) < 0)
    return -1;
  sleep_until (done);
  return 0;
}

static int
ssd_config (const char *key, const char *value)
{
  int taken = disk_config (key, value);
  if (taken <= 0)
    return taken;
  if (strcmp (key, "read_us") == 0)
    return parse_double (key, value, &read_us, 0, 1e6);
  if (strcmp (key, "write_us") == 0)
    return parse_double (key, value, &write_us, 0, 1e6);
  if (strcmp (key, "mbps") == 0)
    return parse_double (key, value, &mbps, 1, 100000);
  if (strcmp (key, "gc_factor") == 0)
    return parse_double (key, value, &gc_factor, 1, 1000);
  if (strcmp (key, "route_us") == 0)
    return parse_double (key, value, &route_us, 0, 100000);
  if (strcmp (key, "channels") == 0)
    return nbdkit_parse_int ("channels", value, &channels);
  if (strcmp (key, "op_bytes") == 0)
    return nbdkit_parse_int64_t ("op_bytes", value, &op_bytes);
  nbdkit_error ("unknown parameter '%s'", key);
  return -1;
}

static int
ssd_config_complete (void)
{
  if (file == NULL || size <= 0) {
    nbdkit_error ("file= and size= are required");
    return -1;
  }
  if (channels < 1 || channels > MAX_CHANNELS || op_bytes < 0) {
    nbdkit_error ("parameters out of range");
    return -1;
  }
  return fault_config_complete ();
}

static int
ssd_get_ready (void)
{
  if (disk_open_file () < 0)
    return -1;
  clock_start ();
  return bus_open ();
}

static int
ssd_flush (void *handle, uint32_t flags)
{
  return 0; /* a completed write is already safe (a power-loss-protected drive's cache) */
}

static struct nbdkit_plugin plugin = {
  .name = "iotuner-ssd",
  .version = "1",
  .magic_config_key = "file",
  .config = ssd_config,
  .config_complete = ssd_config_complete,
  .get_ready = ssd_get_ready,
  .open = disk_open,
  .get_size = disk_get_size,
  .can_multi_conn = disk_can_multi_conn,
  .pread = disk_pread,
  .pwrite = disk_pwrite,
  .flush = ssd_flush,
};

NBDKIT_REGISTER_PLUGIN (plugin)
