/* ncclsim: one rank's (thread's) streams ordered against each other, and the races
 * between them (stream-data-race). A work queued gets a mark (its place in
 * the order: order_queue; NULL if out of memory, then nothing is checked);
 * what it touches is noted, the known parts when queued (order_touch), a
 * kernel's as it runs (order_kernel_access, between order_begin and
 * order_end, which checks it and keeps it). The host's waits and events
 * order the streams. order_caller: where the program made the call that
 * queues (a return address in its code), set by the calls that queue.
 * Included by sim.h, after the types it uses. */
#ifndef NCCLSIM_ORDER_H
#define NCCLSIM_ORDER_H

enum { ORDER_LEGACY = 1, ORDER_PER_THREAD, ORDER_BLOCKING, ORDER_NONBLOCKING };
struct order_mark;
struct order_clock;
extern _Thread_local const void *order_caller;
#define NOTE_CALLER() (order_caller = __builtin_return_address(0))
#define ORDER_FRAMES 8
extern _Thread_local void *order_frames[ORDER_FRAMES]; /* a launch's: */
extern _Thread_local int order_nframes;   /* the calls it is made from */
struct order_mark *order_queue(const void *key, int kind, const char *what);
void order_touch(struct order_mark *m, const void *p, size_t bytes, int writes);
void order_kernel_access(const void *base, const void *p, size_t bytes,
                         int writes, int atomic);
void order_begin(struct order_mark *m);
int order_races_read(const struct order_mark *m, const struct order_mark *read,
                     const void *p, size_t bytes, int *unknown);
void order_end(struct order_mark *m);
void order_drop(struct order_mark *m);
void order_host_waits(const void *key);
void order_host_waits_all(void);
void order_event_record(struct order_clock **clock, const void *key, int kind);
void order_event_gone(struct order_clock *clock);
void order_host_waits_event(const struct order_clock *clock);
void order_stream_waits_event(const void *key, int kind,
                              const struct order_clock *clock);
void order_stream_gone(const void *key);
void order_forget(const void *base, size_t bytes);
/* What stream that is: ORDER_LEGACY, ... (order.c). */
int queue_kind(cudaStream_t stream, int ptds_entry);
/* The mark of a work about to be queued on the stream of `key`, with what
 * it touches that is known now (stream_races.c). */
struct order_mark *order_work(const void *key, int kind, const work_item *item);
/* queues.c: before the host reads [p, p + bytes) (read: the read's
 * mark), runs the work the calling thread queued on other streams that is
 * not ordered with the read and writes those bytes (or, a kernel, may: it
 * takes a device communicator with a window there), so that order_end
 * names the race at the read, as a GPU may run that work first. */
void land_racing(const struct order_mark *read, const void *p, size_t bytes);

#endif
