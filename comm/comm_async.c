/* comm_async: asynchronous requests, run in order by one progress thread per communicator.
 *
 * Why one thread and a FIFO: every rank must run the same collectives in the same order, and a backend's
 * streams (the tcp ring and mesh links) carry one collective at a time. Running the queue in the order
 * the caller filled it keeps the order the caller chose, and a backend still sees one call at a time. The
 * overlap this buys is between the caller's compute and the communication, which is what a training step
 * needs (the backward pass of the next layers while the gradients of the last ones travel).
 *
 * Why blocking calls go through the same queue: a blocking call made while requests are outstanding
 * would otherwise race the progress thread for the sockets, or have to be refused. It queues behind them
 * and waits; when nothing is outstanding (the common case) it runs on the caller's thread as before, so a
 * program that never makes a request pays nothing, not even a thread hand-off.
 *
 * Failure: a failed call leaves the communicator broken (comm.c's sticky error). The progress thread then
 * completes every later queued request with that error at once, so a waiter on the last request hears of
 * a dead peer as soon as the one running hears of it. Abort needs nothing here: the backend's abort wakes
 * the running call, and the progress thread checks the abort flag before starting each request.
 *
 * A stream-ordered backend (nccl: ops->enqueue) needs none of the thread: its stream already runs the calls
 * in order. A request is enqueued at once with a mark after it (a CUDA event), and wait and test look at
 * the marks oldest first, so requests still complete in order, each with the deadline of one call counted
 * from when the one before it was seen done. The failure rule is the same: the first request that fails
 * (abort, a peer lost, the deadline) breaks the communicator and completes every outstanding one with it.
 *
 * The list of requests holds every one made and not yet consumed by wait/test, oldest first: the
 * completed ones, then the running one, then the queued ones from `cursor` on. Completion is in order, so
 * one index (cursor) splits queued from started. O(1) per request, plus O(k) for a failure over k queued. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

struct ftl_comm_request {
	struct ftl_comm *comm;
	struct ftl_comm_request *prev, *next; /* in the communicator's list */
	struct ftl_comm_call call;
	ftl_err err;                          /* the result, once is_done */
	bool is_done;
	bool is_heap;                         /* made by submit (freed by wait/test/destroy); else a blocking
					       * call's, on its stack */
	void *mark;                           /* stream-ordered: where the call ends on the stream, or NULL */
	int64_t deadline_ms;                  /* stream-ordered: set when it becomes the oldest outstanding */
};

struct ftl_comm_async {
	pthread_mutex_t lock;
	pthread_cond_t work;                  /* the progress thread: a request was queued, or stop */
	pthread_cond_t done;                  /* waiters: a request completed */
	pthread_t thread;
	bool has_thread;                      /* false for a stream-ordered backend */
	bool is_stopping;
	struct ftl_comm_request *head, *tail; /* made and not consumed, oldest first */
	struct ftl_comm_request *cursor;      /* the first not started yet, or NULL */
	int n_pending;                        /* queued or running */
};

/* Under the lock. */
static void complete(struct ftl_comm_async *a, struct ftl_comm_request *r, ftl_err err)
{
	r->err = err;
	r->is_done = true;
	a->n_pending--;
}

static void unlink_request(struct ftl_comm_async *a, struct ftl_comm_request *r)
{
	if (r->prev != NULL)
		r->prev->next = r->next;
	else
		a->head = r->next;
	if (r->next != NULL)
		r->next->prev = r->prev;
	else
		a->tail = r->prev;
	if (a->cursor == r)
		a->cursor = r->next;
	r->prev = r->next = NULL;
}

/* Under the lock. */
static void enqueue(struct ftl_comm_async *a, struct ftl_comm_request *r)
{
	r->prev = a->tail;
	r->next = NULL;
	if (a->tail != NULL)
		a->tail->next = r;
	else
		a->head = r;
	a->tail = r;
	if (a->cursor == NULL)
		a->cursor = r;
	a->n_pending++;
	pthread_cond_signal(&a->work);
}

static void *progress_main(void *arg)
{
	struct ftl_comm *comm = arg;
	struct ftl_comm_async *a = comm->async;
	pthread_mutex_lock(&a->lock);
	for (;;) {
		while (a->cursor == NULL && !a->is_stopping)
			pthread_cond_wait(&a->work, &a->lock);
		struct ftl_comm_request *r = a->cursor;
		if (r == NULL)
			break; /* stopping, and nothing left to run */
		a->cursor = r->next;
		pthread_mutex_unlock(&a->lock);
		ftl_err err = comm->broken;
		if (err == FTL_OK && atomic_load(&comm->is_aborted))
			err = ftl_comm_fail(comm, FTL_ERR_ABORTED, true, "%s aborted before it started",
					    ftl_comm_call_kind_strs[r->call.kind]);
		if (err == FTL_OK && r->call.count + (r->call.kind == FTL_COMM_CALL_BARRIER) > 0)
			err = ftl_comm_call_run(comm, &r->call);
		pthread_mutex_lock(&a->lock);
		complete(a, r, err);
		ftl_err broken = comm->broken;
		if (broken != FTL_OK) /* the sticky error fails the rest now, not one by one */
			for (; a->cursor != NULL; a->cursor = a->cursor->next)
				complete(a, a->cursor, broken);
		pthread_cond_broadcast(&a->done);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

static bool is_stream_ordered(const struct ftl_comm *comm)
{
	return comm->ops->enqueue != NULL;
}

/* Makes comm->async and starts the progress thread (none for a stream-ordered backend). */
static ftl_err start(struct ftl_comm *comm)
{
	struct ftl_comm_async *a = calloc(1, sizeof(*a));
	if (a == NULL)
		return ftl_comm_fail(comm, FTL_ERR_SYSTEM, false, "out of memory for asynchronous requests");
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->work, NULL);
	pthread_cond_init(&a->done, NULL);
	comm->async = a;
	comm->error_lock = &a->lock; /* ftl_comm_fail's, from now on: the progress thread may fail the comm too */
	if (is_stream_ordered(comm))
		return FTL_OK;
	int rc = pthread_create(&a->thread, NULL, progress_main, comm);
	a->has_thread = rc == 0;
	if (rc != 0) {
		comm->async = NULL;
		comm->error_lock = NULL;
		pthread_cond_destroy(&a->done);
		pthread_cond_destroy(&a->work);
		pthread_mutex_destroy(&a->lock);
		free(a);
		return ftl_comm_fail(comm, FTL_ERR_SYSTEM, false, "cannot start the progress thread: %s", strerror(rc));
	}
	return FTL_OK;
}

/* Stream-ordered: puts r's call on the stream and r on the list. */
static ftl_err stream_enqueue(struct ftl_comm *comm, struct ftl_comm_request *r)
{
	ftl_err err = ftl_comm_await(comm); /* a collective may not be enqueued before the init has completed */
	if (err == FTL_OK)
		err = comm->ops->enqueue(comm, &r->call, &r->mark);
	if (err != FTL_OK)
		return err;
	struct ftl_comm_async *a = comm->async;
	pthread_mutex_lock(&a->lock);
	if (a->n_pending == 0)
		r->deadline_ms = ftl_comm_now_ms() + comm->timeout_ms;
	enqueue(a, r);
	a->cursor = NULL; /* nothing for a thread to start */
	pthread_mutex_unlock(&a->lock);
	return FTL_OK;
}

/* Stream-ordered: looks at the outstanding requests oldest first, up to and including last, completing
 * those whose mark is reached; with is_blocking waits for each. The first failure completes every
 * outstanding request with the communicator's sticky error. Only the calling thread changes the list (one
 * thread at a time makes and waits requests); the lock is not held across poll, whose ftl_comm_fail takes it. */
static void stream_progress(struct ftl_comm *comm, struct ftl_comm_request *last, bool is_blocking)
{
	struct ftl_comm_async *a = comm->async;
	for (struct ftl_comm_request *r = a->head; r != NULL && !last->is_done; r = r->next) {
		if (r->is_done)
			continue;
		bool is_done = false;
		ftl_err err = comm->broken;
		if (err == FTL_OK)
			err = comm->ops->poll(comm, r->mark, r->deadline_ms, is_blocking, &is_done);
		pthread_mutex_lock(&a->lock);
		if (err != FTL_OK) {
			ftl_err sticky = comm->broken != FTL_OK ? comm->broken : err;
			for (struct ftl_comm_request *o = r; o != NULL; o = o->next)
				if (!o->is_done)
					complete(a, o, sticky);
		} else if (is_done) {
			complete(a, r, FTL_OK);
			if (r->next != NULL)
				r->next->deadline_ms = ftl_comm_now_ms() + comm->timeout_ms;
		}
		pthread_mutex_unlock(&a->lock);
		if (!is_done)
			return;
	}
}

static void release_mark(struct ftl_comm *comm, struct ftl_comm_request *r)
{
	if (r->mark != NULL)
		comm->ops->release_mark(comm, r->mark);
	r->mark = NULL;
}

ftl_err ftl_comm_async_submit(struct ftl_comm *comm, const struct ftl_comm_call *call, ftl_comm_request **req)
{
	ftl_err err;
	if (comm->async == NULL && (err = start(comm)) != FTL_OK)
		return err;
	struct ftl_comm_request *r = calloc(1, sizeof(*r));
	if (r == NULL)
		return ftl_comm_fail(comm, FTL_ERR_SYSTEM, false, "out of memory for a request");
	r->comm = comm;
	r->call = *call;
	r->is_heap = true;
	if (is_stream_ordered(comm)) {
		err = stream_enqueue(comm, r);
		if (err != FTL_OK) {
			free(r);
			return err;
		}
	} else {
		pthread_mutex_lock(&comm->async->lock);
		enqueue(comm->async, r);
		pthread_mutex_unlock(&comm->async->lock);
	}
	*req = r;
	return FTL_OK;
}

ftl_err ftl_comm_async_allreduce(struct ftl_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
				  ftl_dtype dtype, ftl_reduce_op op)
{
	struct ftl_comm_call call = {.kind = FTL_COMM_CALL_ALLREDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf,
				    .count = count, .dtype = dtype, .op = op};
	return count == 0 ? FTL_OK : ftl_comm_async_call(comm, &call);
}

ftl_err ftl_comm_async_call(struct ftl_comm *comm, const struct ftl_comm_call *call)
{
	struct ftl_comm_async *a = comm->async;
	if (a == NULL)
		return ftl_comm_call_run(comm, call);
	pthread_mutex_lock(&a->lock);
	if (a->n_pending == 0) {
		/* The progress thread is idle and stays so: only this thread queues. */
		pthread_mutex_unlock(&a->lock);
		return ftl_comm_call_run(comm, call);
	}
	struct ftl_comm_request r = {.comm = comm, .call = *call};
	if (is_stream_ordered(comm)) { /* on the stream behind the requests; completes after them */
		pthread_mutex_unlock(&a->lock);
		ftl_err err = stream_enqueue(comm, &r);
		if (err != FTL_OK)
			return err;
		stream_progress(comm, &r, true);
		pthread_mutex_lock(&a->lock);
		unlink_request(a, &r);
		pthread_mutex_unlock(&a->lock);
		release_mark(comm, &r);
		return r.err;
	}
	enqueue(a, &r);
	while (!r.is_done)
		pthread_cond_wait(&a->done, &a->lock);
	unlink_request(a, &r);
	pthread_mutex_unlock(&a->lock);
	return r.err;
}

int ftl_comm_async_pending(struct ftl_comm *comm)
{
	struct ftl_comm_async *a = comm->async;
	if (a == NULL)
		return 0;
	pthread_mutex_lock(&a->lock);
	int n = a->n_pending;
	pthread_mutex_unlock(&a->lock);
	return n;
}

/* What wait and test share: the request must be a live one of this communicator. */
static ftl_err check_request(struct ftl_comm *comm, ftl_comm_request **req, const char *what)
{
	if (comm == NULL || req == NULL)
		return FTL_ERR_INVALID;
	if (*req == NULL)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "%s: the request is NULL (already waited?)", what);
	if ((*req)->comm != comm || comm->async == NULL)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "%s: the request belongs to another communicator",
				     what);
	return FTL_OK;
}

/* Under the lock: takes a completed request off the list and frees it. */
static ftl_err consume(struct ftl_comm_async *a, ftl_comm_request **req)
{
	struct ftl_comm_request *r = *req;
	ftl_err err = r->err;
	unlink_request(a, r);
	release_mark(r->comm, r);
	free(r);
	*req = NULL;
	return err;
}

ftl_err ftl_comm_wait(ftl_comm *comm, ftl_comm_request **req)
{
	ftl_err err = check_request(comm, req, "wait");
	if (err)
		return err;
	struct ftl_comm_async *a = comm->async;
	if (is_stream_ordered(comm))
		stream_progress(comm, *req, true);
	pthread_mutex_lock(&a->lock);
	while (!(*req)->is_done) /* never for ever: every running call has a deadline */
		pthread_cond_wait(&a->done, &a->lock);
	err = consume(a, req);
	pthread_mutex_unlock(&a->lock);
	return err;
}

ftl_err ftl_comm_test(ftl_comm *comm, ftl_comm_request **req, int *done)
{
	if (done != NULL)
		*done = 0;
	ftl_err err = check_request(comm, req, "test");
	if (err)
		return err;
	if (done == NULL)
		return ftl_comm_fail(comm, FTL_ERR_INVALID, false, "test: done is NULL");
	struct ftl_comm_async *a = comm->async;
	if (is_stream_ordered(comm))
		stream_progress(comm, *req, false);
	pthread_mutex_lock(&a->lock);
	if ((*req)->is_done) {
		*done = 1;
		err = consume(a, req);
	}
	pthread_mutex_unlock(&a->lock);
	return err;
}

void ftl_comm_async_destroy(struct ftl_comm *comm)
{
	struct ftl_comm_async *a = comm->async;
	if (a == NULL)
		return;
	pthread_mutex_lock(&a->lock);
	a->is_stopping = true;
	bool is_busy = a->n_pending > 0;
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->lock);
	if (is_busy) { /* requests nobody will wait for: stop the running one, fail the rest */
		atomic_store(&comm->is_aborted, 1);
		comm->ops->abort(comm);
	}
	if (a->has_thread)
		pthread_join(a->thread, NULL);
	while (a->head != NULL) {
		struct ftl_comm_request *r = a->head;
		unlink_request(a, r);
		release_mark(comm, r);
		if (r->is_heap)
			free(r);
	}
	comm->async = NULL;
	comm->error_lock = NULL;
	pthread_cond_destroy(&a->done);
	pthread_cond_destroy(&a->work);
	pthread_mutex_destroy(&a->lock);
	free(a);
}
