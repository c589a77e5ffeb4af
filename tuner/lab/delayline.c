/* delayline: the lab network's round-trip time and loss, in user space (no netem here).
 *
 * It runs in the relay namespace, between two veth ends: `in` (towards the sender) and `out`
 * (towards the receiver). Every frame that arrives on one end is held for DELAY_US and then
 * sent, unchanged, out of the other: a wire with a delay. Frames from the sender may also be
 * dropped with probability LOSS_PPM / 10^6 (the forward path only, as a lossy WAN drops data).
 *
 * Why it keeps up: AF_PACKET sockets with PACKET_VNET_HDR take and give whole GSO frames
 * (up to 64 KiB, with the virtio header that says how to segment and checksum them), so at
 * 200 Mbit/s it moves about 400 frames a second, not 17,000 segments. PACKET_QDISC_BYPASS
 * sends straight to the veth, whose peer takes the frame at once. PACKET_IGNORE_OUTGOING
 * keeps it from reading back what it sends.
 *
 * Each direction is a byte ring of QUEUE_BYTES holding [due time, length, frame]: frames
 * arrive in order and wait the same time, so the oldest is always the next due. A full ring
 * drops the frame (counted): size it above rate x delay.
 *
 * usage: delayline PIDFILE IN OUT DELAY_US LOSS_PPM SEED QUEUE_BYTES
 * It writes PIDFILE once both sockets are bound; on SIGTERM it prints its counters to stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define FRAME_MAX (256 * 1024) /* a GSO frame with its headers fits well inside */
#define WRAP UINT32_MAX

struct rec {
	uint64_t due;
	uint32_t len;
	uint32_t pad;
};

struct ring {
	char *buf;
	size_t cap, head, tail; /* head == tail: empty */
	uint64_t passed, lost, full;
};

static volatile sig_atomic_t stop;

static void on_term(int sig) { (void)sig; stop = 1; }

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t round8(size_t n) { return (n + 7) & ~(size_t)7; }

/* Room for `need` contiguous bytes: at the tail, or after wrapping to 0 (never filling up to
 * head, so head == tail keeps meaning empty). NULL when it does not fit. */
static char *ring_reserve(struct ring *r, size_t need)
{
	if (r->head == r->tail)
		r->head = r->tail = 0;
	if (r->tail >= r->head) {
		if (r->tail + need <= r->cap && !(r->tail + need == r->cap && r->head == 0))
			return r->buf + r->tail;
		if (need < r->head) {
			if (r->cap - r->tail >= sizeof(struct rec))
				((struct rec *)(r->buf + r->tail))->len = WRAP;
			r->tail = 0;
			return r->buf;
		}
		return NULL;
	}
	return r->tail + need < r->head ? r->buf + r->tail : NULL;
}

static struct rec *ring_peek(struct ring *r)
{
	if (r->head == r->tail)
		return NULL;
	if (r->cap - r->head < sizeof(struct rec) ||
	    ((struct rec *)(r->buf + r->head))->len == WRAP) {
		r->head = 0;
		if (r->head == r->tail)
			return NULL;
	}
	return (struct rec *)(r->buf + r->head);
}

static void ring_pop(struct ring *r, struct rec *rec)
{
	r->head += sizeof(struct rec) + round8(rec->len);
}

static int open_end(const char *ifname)
{
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	int one = 1, rcvbuf = 32 << 20;
	unsigned idx = if_nametoindex(ifname);
	struct sockaddr_ll sll = {0};
	if (fd < 0 || idx == 0) {
		fprintf(stderr, "delayline: %s: %s\n", ifname, strerror(errno));
		exit(1);
	}
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one) ||
	    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) ||
	    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one)) {
		fprintf(stderr, "delayline: %s: setsockopt: %s\n", ifname, strerror(errno));
		exit(1);
	}
	/* A burst of frames may arrive while the other direction is being served. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)idx;
	if (bind(fd, (struct sockaddr *)&sll, sizeof sll)) {
		fprintf(stderr, "delayline: bind %s: %s\n", ifname, strerror(errno));
		exit(1);
	}
	return fd;
}

static uint64_t rng_state;

static uint32_t rng(void) /* xorshift64*: the loss draw, repeatable from the seed */
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

/* Take every frame waiting on `fd` into `r`, due `delay` ns from now. */
static void take(int fd, struct ring *r, uint64_t delay, uint32_t loss_ppm, char *frame)
{
	for (;;) {
		ssize_t n = recv(fd, frame, FRAME_MAX, MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0)
			return;
		if (n > FRAME_MAX || (loss_ppm && rng() % 1000000u < loss_ppm)) {
			r->lost++;
			continue;
		}
		size_t need = sizeof(struct rec) + round8((size_t)n);
		char *at = ring_reserve(r, need);
		if (!at) {
			r->full++;
			continue;
		}
		struct rec *rec = (struct rec *)at;
		rec->due = now_ns() + delay;
		rec->len = (uint32_t)n;
		memcpy(at + sizeof(struct rec), frame, (size_t)n);
		r->tail = (size_t)(at - r->buf) + need;
	}
}

/* Send every frame of `r` that is due; the time the next one is due (0: none waiting). */
static uint64_t give(int fd, struct ring *r)
{
	struct rec *rec;
	while ((rec = ring_peek(r))) {
		if (rec->due > now_ns())
			return rec->due;
		if (send(fd, (char *)rec + sizeof *rec, rec->len, 0) < 0)
			r->full++; /* the peer's backlog is full: a drop, as on a wire */
		else
			r->passed++;
		ring_pop(r, rec);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 8) {
		fprintf(stderr, "usage: delayline PIDFILE IN OUT DELAY_US LOSS_PPM SEED QUEUE_BYTES\n");
		return 2;
	}
	uint64_t delay = strtoull(argv[4], NULL, 10) * 1000u;
	uint32_t loss_ppm = (uint32_t)strtoul(argv[5], NULL, 10);
	rng_state = strtoull(argv[6], NULL, 10) * 2 + 1;
	size_t cap = (size_t)strtoull(argv[7], NULL, 10);
	if (delay > 10000000000ull || loss_ppm > 1000000u || cap < (1u << 20) || cap > (1ull << 31)) {
		fprintf(stderr, "delayline: parameter out of range\n");
		return 2;
	}
	struct ring fwd = {.cap = cap}, back = {.cap = cap};
	char *frame = malloc(FRAME_MAX);
	fwd.buf = malloc(cap);
	back.buf = malloc(cap);
	if (!frame || !fwd.buf || !back.buf) {
		fprintf(stderr, "delayline: out of memory\n");
		return 1;
	}
	int in = open_end(argv[2]), out = open_end(argv[3]);
	struct sigaction sa = {.sa_handler = on_term};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
	FILE *pf = fopen(tmp, "w");
	if (!pf || fprintf(pf, "%d\n", getpid()) < 0 || fclose(pf) || rename(tmp, argv[1])) {
		fprintf(stderr, "delayline: pidfile %s: %s\n", argv[1], strerror(errno));
		return 1;
	}

	struct pollfd fds[2] = {{.fd = in, .events = POLLIN}, {.fd = out, .events = POLLIN}};
	while (!stop) {
		take(in, &fwd, delay, loss_ppm, frame);
		take(out, &back, delay, 0, frame);
		uint64_t a = give(out, &fwd), b = give(in, &back);
		uint64_t next = a && b ? (a < b ? a : b) : (a ? a : b);
		struct timespec ts = {1, 0}, *wait = &ts;
		if (next) {
			uint64_t now = now_ns();
			uint64_t left = next > now ? next - now : 0;
			ts.tv_sec = (time_t)(left / 1000000000u);
			ts.tv_nsec = (long)(left % 1000000000u);
		}
		if (ppoll(fds, 2, wait, NULL) < 0 && errno != EINTR)
			break;
	}
	fprintf(stderr, "delayline: forward passed %llu lost %llu full %llu; back passed %llu "
		"full %llu\n", (unsigned long long)fwd.passed, (unsigned long long)fwd.lost,
		(unsigned long long)fwd.full, (unsigned long long)back.passed,
		(unsigned long long)back.full);
	return 0;
}
