/* The C ABI of a DDL relay peer (libpredrop_ddl_capi.so), for trainers in other languages: the
 * Python package python/predrop (ctypes) wraps it for PyTorch's DDP (docs/ddl-torch.md).
 *
 * A peer runs the worker side of the relay protocol (predrop::ddl::capi::GradientPeer) on its own
 * thread with its own event loop. predrop_ddl_open() blocks until the job has started (every
 * worker joined) or fails. Per stage the caller submits one flat float32 gradient and a buffer of
 * the same length; when the stage closes (complete, or at the stage deadline, missing chunks
 * filled as the relay's job says) the peer writes the average into that buffer and calls the
 * stage callback *on the peer's thread*. The caller reports P for each closed stage with
 * predrop_ddl_report(). No call blocks on the network except open() and close().
 *
 * Threading: every function may be called from any thread; calls on one peer are serialised by
 * the peer. The callback must not call predrop_ddl_close() on its own peer (it would wait for its
 * own thread); the other functions are fine.
 * Errors: functions return 0 on success and -1 on error, with the text in the caller's buffer
 * (open) or from predrop_ddl_error(). A peer that failed (relay silent during a stage, removed,
 * BYE) stays failed: every later submit or report returns -1 with the reason. */
#ifndef PREDROP_DDL_CAPI_PREDROP_DDL_H
#define PREDROP_DDL_CAPI_PREDROP_DDL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PREDROP_DDL_API __attribute__((visibility("default")))

/* Version of this ABI; predrop_ddl_open() refuses options of another. */
/* 2: predrop_ddl_options.stages and idle_close_ms, close_reasons 3 and 4.
 * 3: the stage's timeline in predrop_ddl_stage_info (submit_us .. closed_us). */
#define PREDROP_DDL_ABI_VERSION 3

/* One closed stage, passed to the stage callback. */
typedef struct predrop_ddl_stage_info {
  uint32_t stage;             /* stage id (the relay's numbering, consecutive) */
  int32_t status;             /* 0: `average` holds the result; -1: failed, see `error` */
  const char* error;          /* why it failed (valid during the callback), else "" */
  uint32_t received;          /* aggregate chunks received */
  uint32_t announced;         /* chunks the relay sent after its pre-discard */
  uint32_t lost;              /* announced - received */
  uint32_t filled;            /* chunks filled by the missing-chunk policy */
  uint32_t partial;           /* chunks the relay averaged over fewer than all workers */
  uint32_t contributors;      /* workers the relay's aggregate averages */
  uint32_t chunks;            /* chunks of the whole gradient */
  uint32_t close_reason;      /* 0 complete, 1 deadline, 2 forced, 3 past the job's end, 4 idle */
  uint64_t deadline_us;       /* the stage deadline D that applied */
  double reception_period_us; /* L of the aggregate */
  uint64_t stage_us;          /* from submit to close */
  /* The stage's timeline: CLOCK_MONOTONIC in microseconds (Python's time.monotonic_ns() / 1000
   * on Linux), 0 where it did not happen. */
  uint64_t submit_us;      /* predrop_ddl_submit() was called */
  uint64_t begin_us;       /* the peer's thread opened the stage */
  uint64_t uplink_sent_us; /* the last gradient chunk was handed to the kernel */
  uint64_t pdsc_us;        /* the relay's "stage closed" arrived */
  uint64_t first_chunk_us; /* the first chunk of the average arrived */
  uint64_t last_chunk_us;  /* the last chunk of the average arrived */
  uint64_t closed_us;      /* the stage closed (the callback follows the fill and the copy) */
} predrop_ddl_stage_info;

/* Called on the peer's thread when a submitted stage closes or fails. */
typedef void (*predrop_ddl_stage_callback)(void* user, const predrop_ddl_stage_info* info);

/* Settings of predrop_ddl_open(). Zero values take the defaults given. */
typedef struct predrop_ddl_options {
  uint32_t abi_version;      /* PREDROP_DDL_ABI_VERSION */
  const char* relay;         /* "host:port" (IPv4 or IPv6 literal, or localhost) */
  const char* bind;          /* local "host:port"; NULL = any address, any port */
  const char* key;           /* "a=crypto:1 <SUITE> inline:<base64>" or "none"; NULL = env */
  int32_t rank;              /* requested rank, or -1 for any free one */
  uint64_t model_seed;       /* the same on every worker (the relay checks) */
  uint32_t tensor_elements;  /* length of the flat gradient */
  uint32_t join_timeout_ms;  /* no answer to the join: fail (10000) */
  uint32_t start_timeout_ms; /* joined but the job does not start: fail (60000) */
  uint32_t relay_silence_ms; /* nothing from the relay in an open stage: fail (5000) */
  predrop_ddl_stage_callback on_stage;
  void* user;
  /* Stages the job runs (the same on every worker; 0 = not known). A stage past the last one
   * (after skipping ahead) closes at once with close_reason 3 and nothing received, instead of
   * waiting for a relay whose other workers have left. */
  uint32_t stages;
  /* Once a chunk of the open stage's aggregate came, nothing more of it for this long closes the
   * stage (close_reason 4) before the deadline: the rest was lost on the way. 0 = off. */
  uint32_t idle_close_ms;
} predrop_ddl_options;

/* The job, as the relay described it. */
typedef struct predrop_ddl_job {
  uint32_t rank;
  uint32_t workers;
  uint32_t start_stage;
  uint32_t chunk_elements;
  uint32_t chunks;
  uint32_t fill_own; /* 1: missing chunks are filled with the own gradient, 0: with zeros */
  uint32_t stage_deadline_ms; /* 0 = adaptive */
} predrop_ddl_job;

typedef struct predrop_ddl_peer predrop_ddl_peer;

/* Joins the job and waits until it starts. NULL on failure, with the reason in `error`. */
PREDROP_DDL_API predrop_ddl_peer* predrop_ddl_open(const predrop_ddl_options* options, char* error,
                                                   size_t error_size);
/* The job of an open peer. */
PREDROP_DDL_API int predrop_ddl_job_info(const predrop_ddl_peer* peer, predrop_ddl_job* job);
/* Starts the next stage with `gradient`, copied before the call returns; the average goes to
 * `average` (the caller keeps it alive until the stage's callback). Writes the stage id. */
PREDROP_DDL_API int predrop_ddl_submit(predrop_ddl_peer* peer, const float* gradient,
                                       float* average, size_t elements, uint32_t* stage);
/* P (the loss reduction) of a closed stage: the stage's report goes to the relay. */
PREDROP_DDL_API int predrop_ddl_report(predrop_ddl_peer* peer, uint32_t stage, double performance);
/* The reason of the last error or failure ("" if none), copied into `out`. */
PREDROP_DDL_API void predrop_ddl_error(const predrop_ddl_peer* peer, char* out, size_t out_size);
/* Leaves the job (BYE), stops the thread and frees the peer. A stage still open fails with
 * "closed" (its callback runs before this returns). */
PREDROP_DDL_API void predrop_ddl_close(predrop_ddl_peer* peer);

#ifdef __cplusplus
}
#endif

#endif /* PREDROP_DDL_CAPI_PREDROP_DDL_H */
