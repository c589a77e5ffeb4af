/* iotuner's modelled hard disk: an nbdkit plugin, compiled by nbdkit's cc plugin at `lab up`.
 *
 * It stores every byte in a backing file (on /dev/shm) and completes each request when a
 * mechanical model of a hard disk says it would. Times are seconds on CLOCK_MONOTONIC.
 *
 * Parameters (key=value; checked again in tuner/lab/hdd.py, which is what users write):
 *   file          the backing file (data really stored: a read returns what was written)
 *   size          capacity in bytes; the model maps it onto the whole stroke of the arm
 *   rpm           spindle speed: one rotation takes T = 60 / rpm
 *   outer_mbps    media rate of the outermost zone, MB/s (10^6 bytes/s)
 *   inner_mbps    media rate of the innermost zone (about half the outer rate on real drives)
 *   zones         number of zones Z; zone z (0 = outer) reads at
 *                   rate(z) = outer - (outer - inner) * z / (Z - 1)
 *                 and holds N tracks of rate(z) * T bytes each, N the same for every zone
 *                 (zones have equal radial width), N = ceil(size / sum_z rate(z) * T)
 *   seek_track_ms seek over one track; seek over d >= 1 tracks of C in all:
 *                   seek(d) = track + (full - track) * sqrt((d - 1) / (C - 1)),  seek(0) = 0
 *   seek_full_ms  seek over the full stroke
 *   overhead_ms   per-command overhead (decoding, setup), paid when a command reaches an idle
 *                 drive; a command already queued behind another has it hidden under the
 *                 transfer before it (start = max(head free, arrival + overhead))
 *   cache_kib     read-ahead: after a read the head keeps reading on into the drive's cache
 *                 at the media rate, at most cache_kib ahead of what the host has taken, so a
 *                 sequential stream continues without a lost rotation
 *   queue_depth   commands the drive looks at when it picks the next one (NCQ); it serves the
 *                 one with the shortest positioning time (seek + rotational wait) among the
 *                 oldest queue_depth waiting; 1 = first come, first served
 *   seed          the platter's angle at time 0: phase = frac(seed * 0.6180339887)
 *   eio_*, slow_* faults (disk.h); a slow command's extra time also delays the head's stream
 *
 * Position of byte offset o: its zone z, track z * N + (o - start(z)) / track_bytes(z), and
 * angle frac((o - start(z)) / track_bytes(z)) (track skew hides track switches: a stream
 * never waits at a track boundary). The platter's angle at time t is frac(t / T + phase).
 *
 * A read of [o, o + len) that starts at s:
 *   cached:   all of it already read ahead         -> done = s + overhead
 *   stream:   o within the read-ahead, or ahead of the head by at most the cache size
 *             (or one track): the head reads on and reaches it
 *                                                  -> done = max(s + overhead,
 *                                                            time the head reaches o + len)
 *   else positioned: done = s + overhead + seek(|track(o) - track(head)|)
 *                           + rotational wait until angle(o) is under the head + len / rate
 * A write is always positioned (write cache off: it completes once it is on the platter).
 *
 * Deterministic: no randomness besides the seed's phase; what varies from run to run is only
 * when requests arrive (and so the rotational waits), as on a real drive.
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
#define MAX_ZONES 64

static const char *file;
static int64_t size = -1;
static double rpm = 7200, outer_mbps = 200, inner_mbps = 100;
static int zones = 16;
static double seek_track_ms = 1.0, seek_full_ms = 16.0, overhead_ms = 0.2;
static int64_t cache_kib = 4096;
static int queue_depth = 32;
static int64_t seed = 1;

/* Geometry, fixed once configured. */
static int fd = -1;
static double T, phase;
static double zone_rate[MAX_ZONES];  /* bytes/s */
static double zone_track[MAX_ZONES]; /* bytes per track */
static double zone_start[MAX_ZONES]; /* first byte */
static int64_t tracks_per_zone, tracks;

/* The head: streaming forward from stream_off at stream_t at stream_rate while `streaming`;
 * `consumed` is the end of what the host has read from the stream; `head_track` where it
 * rests otherwise. `busy` while a chosen command's owner has not yet woken. */
static int streaming;
static double stream_off, stream_t, stream_rate, stream_low, consumed;
static int64_t head_track;
static double busy_until;
static int busy;

struct request {
  uint64_t off;
  uint32_t len;
  int write;
  double arrival;
  double done;
  int chosen;
  pthread_cond_t cond; /* its owner waits here until chosen: no herd to wake */
  struct request *next;
};
static struct request *waiting; /* oldest first */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static double
frac (double x)
{
  double f = x - (double) (int64_t) x;
  return f < 0 ? f + 1 : f;
}

static int
zone_of (double off)
{
  int z = zones - 1;
  while (z > 0 && off < zone_start[z])
    z--;
  return z;
}

static int64_t
track_of (double off)
{
  int z = zone_of (off);
  return z * tracks_per_zone + (int64_t) ((off - zone_start[z]) / zone_track[z]);
}

static double
angle_of (double off)
{
  int z = zone_of (off);
  return frac ((off - zone_start[z]) / zone_track[z]);
}

static double
seek_time (int64_t from, int64_t to)
{
  int64_t d = from > to ? from - to : to - from;
  if (d == 0)
    return 0;
  double span = tracks > 1 ? (double) (d - 1) / (double) (tracks - 1) : 0;
  return (seek_track_ms + (seek_full_ms - seek_track_ms) * __builtin_sqrt (span)) / 1000;
}

static double
rotational_wait (double off, double t)
{
  double wait = frac (angle_of (off) - frac (t / T + phase)) * T;
  return wait > T - 1e-7 ? 0 : wait; /* exactly under the head: no turn */
}

/* Where a streaming head is at time t: as far as the media rate allows, but at most
 * cache_kib ahead of what the host has taken. */
static double
stream_head (double t)
{
  double pos = stream_off + stream_rate * (t - stream_t);
  double cap = consumed + cache_kib * 1024.0;
  if (pos > cap)
    pos = cap;
  if (pos > size)
    pos = size;
  return pos;
}

static int64_t
head_track_at (double t)
{
  if (!streaming)
    return head_track;
  double pos = stream_head (t);
  return track_of (pos < size ? pos : size - 1);
}

/* The model: when a command starting at s (head free, command decoded) would finish; if
 * `commit`, the head's state moves on as it would. `positioning` gets the time before the
 * transfer begins (what shortest-positioning-first compares). */
static double
service (const struct request *r, double s, int commit, double *positioning)
{
  double o = (double) r->off, end = o + r->len;
  double ready = r->arrival + overhead_ms / 1000;
  double t1 = s > ready ? s : ready;
  if (!r->write && streaming) {
    double pos = stream_head (s);
    double uncapped = stream_off + stream_rate * (s - stream_t);
    int zone_same = zone_of (o) == zone_of (stream_off);
    if (o >= stream_low && o >= pos - cache_kib * 1024.0 && end <= pos) {
      *positioning = t1 - s;
      if (commit && end > consumed)
        consumed = end;
      return t1;
    }
    double ahead = zone_track[zone_of (pos < size ? pos : size - 1)];
    if (ahead < cache_kib * 1024.0)
      ahead = cache_kib * 1024.0;
    if (o >= stream_low && o >= pos - cache_kib * 1024.0 && o <= pos + ahead &&
        pos >= uncapped - 1 && zone_same) {
      double reach = stream_t + (end - stream_off) / stream_rate;
      double done = reach > t1 ? reach : t1;
      *positioning = 0;
      if (commit && end > consumed)
        consumed = end;
      return done;
    }
  }
  /* What the read-ahead already holds is not read again: start where it stops. */
  double x = o;
  if (!r->write && streaming) {
    double pos = stream_head (s);
    if (o >= stream_low && o >= pos - cache_kib * 1024.0 && o < pos)
      x = pos;
  }
  int64_t from = head_track_at (s);
  double t2 = t1 + seek_time (from, track_of (x));
  double t3 = t2 + rotational_wait (x, t2);
  double rate = zone_rate[zone_of (x)];
  double done = t3 + (end - x) / rate;
  *positioning = t3 - s;
  if (commit) {
    if (r->write) {
      streaming = 0;
      head_track = track_of (end < size ? end : size - 1);
    } else {
      streaming = 1;
      stream_off = x;
      stream_low = x;
      stream_t = t3;
      stream_rate = rate;
      consumed = end;
    }
  }
  return done;
}

/* With the lock held and the head free: choose the next command among the oldest
 * queue_depth waiting, the one with the shortest positioning time, and wake its owner. */
static void
dispatch (void)
{
  if (busy || waiting == NULL)
    return;
  struct request **best = NULL, **link = &waiting;
  double best_pos = 0;
  for (int n = 0; *link != NULL && n < queue_depth; n++, link = &(*link)->next) {
    double s = busy_until > (*link)->arrival ? busy_until : (*link)->arrival;
    double positioning;
    service (*link, s, 0, &positioning);
    if (best == NULL || positioning < best_pos) {
      best = link;
      best_pos = positioning;
    }
  }
  struct request *r = *best;
  *best = r->next;
  double s = busy_until > r->arrival ? busy_until : r->arrival;
  double positioning;
  r->done = service (r, s, 1, &positioning);
  double extra = fault_extra (s, r->done - s);
  if (extra > 0) { /* the drive turns slow: the head's stream falls behind by as much */
    r->done += extra;
    stream_t += extra;
  }
  r->chosen = 1;
  busy = 1;
  busy_until = r->done;
  pthread_cond_signal (&r->cond);
}

/* Queue the command, wait until the drive chooses it, then until the model says it is done.
 * The data moves first, inside the modelled time: the copy costs the model nothing. */
static int
perform (void *buf, const void *wbuf, uint32_t count, uint64_t offset)
{
  if (fault_eio (offset, count)) {
    nbdkit_set_error (EIO); /* not logged: a reader retrying would fill the log */
    return -1;
  }
  struct request r = { .off = offset, .len = count, .write = wbuf != NULL, .arrival = now () };
  ssize_t moved = wbuf ? pwrite (fd, wbuf, count, (off_t) offset)
                       : pread (fd, buf, count, (off_t) offset);
  if (moved != (ssize_t) count) {
    nbdkit_error ("%s %s at %llu: %s", wbuf ? "pwrite" : "pread", file,
                  (unsigned long long) offset, moved < 0 ? strerror (errno) : "short");
    if (moved >= 0)
      errno = EIO;
    return -1;
  }
  pthread_cond_init (&r.cond, NULL);
  pthread_mutex_lock (&lock);
  struct request **link = &waiting;
  while (*link != NULL)
    link = &(*link)->next;
  *link = &r;
  dispatch ();
  while (!r.chosen)
    pthread_cond_wait (&r.cond, &lock);
  pthread_mutex_unlock (&lock);
  pthread_cond_destroy (&r.cond);
  sleep_until (r.done);
  pthread_mutex_lock (&lock);
  busy = 0;
  dispatch ();
  pthread_mutex_unlock (&lock);
  return 0;
}

static int
hdd_config (const char *key, const char *value)
{
  int fault = fault_config (key, value);
  if (fault <= 0)
    return fault;
  if (strcmp (key, "file") == 0) {
    file = value;
    return 0;
  }
  if (strcmp (key, "size") == 0)
    return (size = nbdkit_parse_size (value)) < 0 ? -1 : 0;
  if (strcmp (key, "rpm") == 0)
    return parse_double (key, value, &rpm, 1000, 20000);
  if (strcmp (key, "outer_mbps") == 0)
    return parse_double (key, value, &outer_mbps, 1, 2000);
  if (strcmp (key, "inner_mbps") == 0)
    return parse_double (key, value, &inner_mbps, 1, 2000);
  if (strcmp (key, "zones") == 0)
    return nbdkit_parse_int ("zones", value, &zones);
  if (strcmp (key, "seek_track_ms") == 0)
    return parse_double (key, value, &seek_track_ms, 0, 100);
  if (strcmp (key, "seek_full_ms") == 0)
    return parse_double (key, value, &seek_full_ms, 0, 100);
  if (strcmp (key, "overhead_ms") == 0)
    return parse_double (key, value, &overhead_ms, 0, 100);
  if (strcmp (key, "cache_kib") == 0)
    return nbdkit_parse_int64_t ("cache_kib", value, &cache_kib);
  if (strcmp (key, "queue_depth") == 0)
    return nbdkit_parse_int ("queue_depth", value, &queue_depth);
  if (strcmp (key, "seed") == 0)
    return nbdkit_parse_int64_t ("seed", value, &seed);
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
  if (zones < 1 || zones > MAX_ZONES || queue_depth < 1 || queue_depth > 256 ||
      cache_kib < 0 || inner_mbps > outer_mbps || seek_full_ms < seek_track_ms) {
    nbdkit_error ("parameters out of range");
    return -1;
  }
  if (fault_config_complete (size) < 0)
    return -1;
  T = 60.0 / rpm;
  phase = frac ((double) seed * 0.6180339887498949);
  double per_track_row = 0;
  for (int z = 0; z < zones; z++) {
    double step = zones > 1 ? (double) z / (zones - 1) : 0;
    zone_rate[z] = (outer_mbps - (outer_mbps - inner_mbps) * step) * 1e6;
    zone_track[z] = zone_rate[z] * T;
    per_track_row += zone_track[z];
  }
  tracks_per_zone = (int64_t) (size / per_track_row) + 1;
  tracks = tracks_per_zone * zones;
  double start = 0;
  for (int z = 0; z < zones; z++) {
    zone_start[z] = start;
    start += zone_track[z] * tracks_per_zone;
  }
  return 0;
}

static int
hdd_get_ready (void)
{
  fd = open (file, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    nbdkit_error ("open %s: %m", file);
    return -1;
  }
  clock_start (); /* whole seconds: the phase stays the seed's */
  return 0;
}

static void *
hdd_open (int readonly)
{
  return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t
hdd_get_size (void *handle)
{
  return size;
}

static int
hdd_can_multi_conn (void *handle)
{
  return 1; /* one drive behind every connection; flush has nothing to flush */
}

static int
hdd_pread (void *handle, void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
  return perform (buf, NULL, count, offset);
}

static int
hdd_pwrite (void *handle, const void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
  return perform (NULL, buf, count, offset);
}

static int
hdd_flush (void *handle, uint32_t flags)
{
  return 0; /* write cache off: a completed write is already on the platter */
}

static struct nbdkit_plugin plugin = {
  .name = "iotuner-hdd",
  .version = "1",
  .magic_config_key = "file",
  .config = hdd_config,
  .config_complete = hdd_config_complete,
  .get_ready = hdd_get_ready,
  .open = hdd_open,
  .get_size = hdd_get_size,
  .can_multi_conn = hdd_can_multi_conn,
  .pread = hdd_pread,
  .pwrite = hdd_pwrite,
  .flush = hdd_flush,
};

NBDKIT_REGISTER_PLUGIN (plugin)
