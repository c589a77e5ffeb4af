/* iotuner's modelled hard disk: an nbdkit plugin, compiled by nbdkit's cc plugin at `lab up`.
 *
 * It stores every byte in a backing file (on /dev/shm) and completes each request when a
 * mechanical model of a hard disk says it would: every formula is in hdd_model.h (shared with
 * raid.c, whose members are such drives). Times are seconds on CLOCK_MONOTONIC (disk.h).
 *
 * Parameters (key=value; checked again in tuner/lab/hdd.py, which is what users write):
 *   file          the backing file (data really stored: a read returns what was written)
 *   size          capacity in bytes; the model maps it onto the whole stroke of the arm
 *   rpm, outer_mbps, inner_mbps, zones, seek_track_ms, seek_full_ms, overhead_ms, cache_kib,
 *   queue_depth, seed
 *                 the drive's mechanics (hdd_model.h)
 *   eio_*, slow_* faults (disk.h)
 *   bus_file, bus_mbps
 *                 a bus shared with other modelled disks (disk.h)
 *
 * Deterministic: no randomness besides the seed's phase; what varies from run to run is only
 * when requests arrive (and so the rotational waits), as on a real drive.
 */
#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "disk.h"      /* the clock, number parsing, faults, the bus */
#include "hdd_model.h" /* the drive */

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

static struct drive the_drive;

/* Move the data, then wait as long as the model says: the copy is inside the modelled time
 * (the command arrived before it), so it costs the model nothing. */
static int
perform (void *buf, const void *wbuf, uint32_t count, uint64_t offset)
{
  if (fault_eio (offset, count)) {
    nbdkit_set_error (EIO); /* not logged: a reader retrying would fill the log */
    return -1;
  }
  double arrival = now ();
  if (disk_move (buf, wbuf, count, offset) < 0)
    return -1;
  struct command c = { .drive = &the_drive, .off = offset, .len = count, .write = wbuf != NULL };
  run_commands (&c, 1, arrival);
  return 0;
}

static int
hdd_config (const char *key, const char *value)
{
  int taken = disk_config (key, value);
  if (taken == 1)
    taken = drive_config (key, value);
  if (taken <= 0)
    return taken;
  nbdkit_error ("unknown parameter '%s'", key);
  return -1;
}

static int
hdd_config_complete (void)
{
  if (file == NULL || size <= 0) {
    nbdkit_error ("file= and size= are required");
    return -1;
  }
  if (drive_geometry (size) < 0 || fault_config_complete () < 0)
    return -1;
  drive_init (&the_drive, 0);
  return 0;
}

static int
hdd_get_ready (void)
{
  if (disk_open_file () < 0)
    return -1;
  clock_start (); /* whole seconds: the phase stays the seed's */
  return bus_open ();
}

static int
hdd_flush (void *handle, uint32_t flags)
{
  return 0; /* write cache off: a completed write is already on the platter */
}

static struct nbdkit_plugin plugin = {
  .name = "iotuner-hdd",
  .version = "2",
  .magic_config_key = "file",
  .config = hdd_config,
  .config_complete = hdd_config_complete,
  .get_ready = hdd_get_ready,
  .open = disk_open,
  .get_size = disk_get_size,
  .can_multi_conn = disk_can_multi_conn,
  .pread = disk_pread,
  .pwrite = disk_pwrite,
  .flush = hdd_flush,
};

NBDKIT_REGISTER_PLUGIN (plugin)
