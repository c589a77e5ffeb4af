/* Test harness: raid.c's request planning without nbdkit. Reads lines
 * "level members stripe_kib offset length write" and prints "reads writes": the member
 * commands raid.c would issue. Compiled by tests/lab/test_raid_plan.py. */
#include <stdarg.h>
#include <stdio.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

void
nbdkit_error (const char *fs, ...)
{
  va_list args;
  va_start (args, fs);
  vfprintf (stderr, fs, args);
  va_end (args);
  fputc ('\n', stderr);
}

void nbdkit_set_error (int err) { (void) err; }
int nbdkit_parse_int (const char *w, const char *s, int *r) { return sscanf (s, "%d", r) == 1 ? 0 : -1; }
int nbdkit_parse_int64_t (const char *w, const char *s, int64_t *r)
{
  long long v;
  if (sscanf (s, "%lld", &v) != 1)
    return -1;
  *r = v;
  return 0;
}
int64_t nbdkit_parse_size (const char *s) { long long v; return sscanf (s, "%lld", &v) == 1 ? v : -1; }

#undef NBDKIT_API_VERSION
#include "raid.c"

int
main (void)
{
  int lvl, n;
  long long kib, off, len;
  int write;
  static struct command cmds[1 << 16];
  while (scanf ("%d %d %lld %lld %lld %d", &lvl, &n, &kib, &off, &len, &write) == 6) {
    level = lvl;
    members = n;
    unit = (uint64_t) kib * 1024;
    data_units = (uint64_t) (level == 5 ? members - 1 : members);
    static uint64_t words[STATS_WORDS];
    stats = words;
    struct plan reads, writes;
    plan_init (&reads, cmds);
    plan_init (&writes, cmds + (1 << 15));
    plan_request ((uint64_t) off, (uint64_t) len, write, &reads, &writes);
    printf ("%d %d\n", reads.n, writes.n);
  }
  return 0;
}
