/* The hard disk's mechanics, for hdd.c (one drive) and raid.c (an array of identical
 * drives). Included by a plugin after disk.h, never compiled alone.
 *
 * Parameters (key=value, shared by every drive of a plugin; checked again in
 * tuner/lab/hdd.py, which is what users write):
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
 *   seed          the platter's angle at time 0: drive i's phase = frac((seed + i) * 0.618...)
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
 * A slow fault (disk.h) lengthens a command, and the head's stream falls behind by as much.
 *
 * Commands: a plugin's request becomes one or more drive commands (`struct command`), all
 * queued at once (`run_commands`): each waits in its drive's queue until the drive picks it,
 * is done when the model says, and then crosses the bus (disk.h), if there is one.
 */
#ifndef IOTUNER_HDD_MODEL_H
#define IOTUNER_HDD_MODEL_H

#include <pthread.h>

#define MAX_ZONES 64

static double rpm = 7200, outer_mbps = 200, inner_mbps = 100;
static int zones = 16;
static double seek_track_ms = 1.0, seek_full_ms = 16.0, overhead_ms = 0.2;
static int64_t cache_kib = 4096;
static int queue_depth = 32;
static int64_t seed = 1;

/* Geometry, fixed once configured; the same for every drive of a plugin. */
static int64_t drive_size;
static double T;
static double zone_rate[MAX_ZONES];  /* bytes/s */
static double zone_track[MAX_ZONES]; /* bytes per track */
static double zone_start[MAX_ZONES]; /* first byte */
static int64_t tracks_per_zone, tracks;

struct command;

/* One drive. The head: streaming forward from stream_off at stream_t at stream_rate while
 * `streaming`; `consumed` is the end of what the host has read from the stream; `head_track`
 * where it rests otherwise. `busy` while a chosen command's owner has not yet released it. */
struct drive {
  double phase;
  int streaming;
  double stream_off, stream_t, stream_rate, stream_low, consumed;
  int64_t head_track;
  double busy_until;
  int busy;
  struct command *waiting; /* oldest first */
};

struct waiter {
  pthread_cond_t cond; /* its thread waits here: no herd to wake */
};

struct command {
  struct drive *drive;
  uint64_t off;
  uint32_t len;
  int write;
  double arrival;
  double done; /* the media's; then the bus's */
  int chosen, released;
  struct waiter *owner;
  struct command *next;
};

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
rotational_wait (const struct drive *d, double off, double t)
{
  double wait = frac (angle_of (off) - frac (t / T + d->phase)) * T;
  return wait > T - 1e-7 ? 0 : wait; /* exactly under the head: no turn */
}

/* Where a streaming head is at time t: as far as the media rate allows, but at most
 * cache_kib ahead of what the host has taken. */
static double
stream_head (const struct drive *d, double t)
{
  double pos = d->stream_off + d->stream_rate * (t - d->stream_t);
  double cap = d->consumed + cache_kib * 1024.0;
  if (pos > cap)
    pos = cap;
  if (pos > drive_size)
    pos = drive_size;
  return pos;
}

static int64_t
head_track_at (const struct drive *d, double t)
{
  if (!d->streaming)
    return d->head_track;
  double pos = stream_head (d, t);
  return track_of (pos < drive_size ? pos : drive_size - 1);
}

/* The model: when a command starting at s (head free, command decoded) would finish; if
 * `commit`, the head's state moves on as it would. `positioning` gets the time before the
 * transfer begins (what shortest-positioning-first compares). */
static double
service (struct drive *d, const struct command *r, double s, int commit, double *positioning)
{
  double o = (double) r->off, end = o + r->len;
  double ready = r->arrival + overhead_ms / 1000;
  double t1 = s > ready ? s : ready;
  double cache = cache_kib * 1024.0;
  if (!r->write && d->streaming) {
    double pos = stream_head (d, s);
    double uncapped = d->stream_off + d->stream_rate * (s - d->stream_t);
    int zone_same = zone_of (o) == zone_of (d->stream_off);
    if (o >= d->stream_low && o >= pos - cache && end <= pos) {
      *positioning = t1 - s;
      if (commit && end > d->consumed)
        d->consumed = end;
      return t1;
    }
    double ahead = zone_track[zone_of (pos < drive_size ? pos : drive_size - 1)];
    if (ahead < cache)
      ahead = cache;
    if (o >= d->stream_low && o >= pos - cache && o <= pos + ahead && pos >= uncapped - 1 &&
        zone_same) {
      double reach = d->stream_t + (end - d->stream_off) / d->stream_rate;
      double done = reach > t1 ? reach : t1;
      *positioning = 0;
      if (commit && end > d->consumed)
        d->consumed = end;
      return done;
    }
  }
  /* What the read-ahead already holds is not read again: start where it stops. */
  double x = o;
  if (!r->write && d->streaming) {
    double pos = stream_head (d, s);
    if (o >= d->stream_low && o >= pos - cache && o < pos)
      x = pos;
  }
  int64_t from = head_track_at (d, s);
  double t2 = t1 + seek_time (from, track_of (x));
  double t3 = t2 + rotational_wait (d, x, t2);
  double rate = zone_rate[zone_of (x)];
  double done = t3 + (end - x) / rate;
  *positioning = t3 - s;
  if (commit) {
    if (r->write) {
      d->streaming = 0;
      d->head_track = track_of (end < drive_size ? end : drive_size - 1);
    } else {
      d->streaming = 1;
      d->stream_off = x;
      d->stream_low = x;
      d->stream_t = t3;
      d->stream_rate = rate;
      d->consumed = end;
    }
  }
  return done;
}

/* With the lock held and the head free: choose the next command among the oldest
 * queue_depth waiting, the one with the shortest positioning time, and wake its owner. */
static void
dispatch (struct drive *d)
{
  if (d->busy || d->waiting == NULL)
    return;
  struct command **best = NULL, **link = &d->waiting;
  double best_pos = 0;
  for (int n = 0; *link != NULL && n < queue_depth; n++, link = &(*link)->next) {
    double s = d->busy_until > (*link)->arrival ? d->busy_until : (*link)->arrival;
    double positioning;
    service (d, *link, s, 0, &positioning);
    if (best == NULL || positioning < best_pos) {
      best = link;
      best_pos = positioning;
    }
  }
  struct command *r = *best;
  *best = r->next;
  double s = d->busy_until > r->arrival ? d->busy_until : r->arrival;
  double positioning;
  r->done = service (d, r, s, 1, &positioning);
  double extra = fault_extra (s, r->done - s);
  if (extra > 0) { /* the drive turns slow: the head's stream falls behind by as much */
    r->done += extra;
    d->stream_t += extra;
  }
  r->chosen = 1;
  d->busy = 1;
  d->busy_until = r->done;
  pthread_cond_signal (&r->owner->cond);
}

static void
release (struct command *c)
{
  c->released = 1;
  c->drive->busy = 0;
  dispatch (c->drive);
  c->done = bus_cross (c->done, c->len);
}

/* Queue n commands (their drive, off, len and write set), all arrived at `arrival`, wait
 * until each drive has served its own (each drive freed the moment its command is done, so
 * the next one is chosen then), and return when the last one's bytes are across the bus. */
static void
run_commands (struct command *cmds, int n, double arrival)
{
  struct waiter w;
  pthread_condattr_t attr;
  pthread_condattr_init (&attr);
  pthread_condattr_setclock (&attr, CLOCK_MONOTONIC);
  pthread_cond_init (&w.cond, &attr);
  pthread_condattr_destroy (&attr);
  double last = arrival;
  pthread_mutex_lock (&lock);
  for (int i = 0; i < n; i++) {
    struct command *c = &cmds[i];
    c->arrival = arrival;
    c->chosen = c->released = 0;
    c->owner = &w;
    c->next = NULL;
    struct command **link = &c->drive->waiting;
    while (*link != NULL)
      link = &(*link)->next;
    *link = c;
    dispatch (c->drive);
  }
  for (int pending = n; pending > 0;) {
    double t = now (), next = -1;
    int freed = 0;
    for (int i = 0; i < n; i++) {
      struct command *c = &cmds[i];
      if (!c->chosen || c->released)
        continue;
      if (c->done <= t) {
        release (c);
        freed = 1;
        pending--;
        if (c->done > last)
          last = c->done;
      } else if (next < 0 || c->done < next)
        next = c->done;
    }
    if (pending == 0)
      break;
    /* A release may have chosen another of our own commands on the same drive (a RAID-5
     * request has two on a member whose units its parity unit splits), one this pass had
     * already skipped as not chosen: its signal went to no one waiting, so look again
     * before waiting, or wait forever with the drive held. */
    if (freed)
      continue;
    if (next < 0)
      pthread_cond_wait (&w.cond, &lock);
    else {
      double abs = next + t_epoch;
      struct timespec ts = { (time_t) abs, (long) ((abs - (double) (time_t) abs) * 1e9) };
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait (&w.cond, &lock, &ts);
    }
  }
  pthread_mutex_unlock (&lock);
  pthread_cond_destroy (&w.cond);
  sleep_until (last); /* the bus's transfers, if any */
}

/* A drive parameter's key=value: 0 taken, -1 bad value, 1 not a drive's key. */
static int
drive_config (const char *key, const char *value)
{
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
  return 1;
}

/* Check the drive parameters and lay out a drive of `capacity` bytes; 0 if they fit. */
static int
drive_geometry (int64_t capacity)
{
  if (zones < 1 || zones > MAX_ZONES || queue_depth < 1 || queue_depth > 256 ||
      cache_kib < 0 || inner_mbps > outer_mbps || seek_full_ms < seek_track_ms) {
    nbdkit_error ("parameters out of range");
    return -1;
  }
  drive_size = capacity;
  T = 60.0 / rpm;
  double per_track_row = 0;
  for (int z = 0; z < zones; z++) {
    double step = zones > 1 ? (double) z / (zones - 1) : 0;
    zone_rate[z] = (outer_mbps - (outer_mbps - inner_mbps) * step) * 1e6;
    zone_track[z] = zone_rate[z] * T;
    per_track_row += zone_track[z];
  }
  tracks_per_zone = (int64_t) (capacity / per_track_row) + 1;
  tracks = tracks_per_zone * zones;
  double start = 0;
  for (int z = 0; z < zones; z++) {
    zone_start[z] = start;
    start += zone_track[z] * tracks_per_zone;
  }
  return 0;
}

/* Drive i's starting angle. */
static void
drive_init (struct drive *d, int i)
{
  memset (d, 0, sizeof *d);
  d->phase = frac ((double) (seed + i) * 0.6180339887498949);
}

#endif
