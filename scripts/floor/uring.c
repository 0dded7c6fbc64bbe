/* Kernel-floor responder on io_uring (liburing): a receive per connection
 * always queued, each reply's send and the next receive submitted together,
 * one io_uring_enter per batch of completions instead of a read and a write
 * system call per request. Usage: floor-uring PORT */
#include "responder.h"
#include <liburing.h>

/* user_data: ACCEPT, or a connection pointer with bit 0 set for its send. */
#define ACCEPT 2

static void queue_recv(struct io_uring *ring, struct conn *c) {
  struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
  io_uring_prep_recv(sqe, c->fd, c->in + c->len, BUF - c->len, 0);
  io_uring_sqe_set_data64(sqe, (unsigned long)c);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PORT\n", argv[0]);
    return 2;
  }
  int ls = listen_on(atoi(argv[1]));
  struct io_uring ring;
  struct io_uring_params p = {0};
  /* One thread submits, and completions are processed only when it asks:
   * the cheapest mode (Linux 6.1+). */
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  int e = io_uring_queue_init_params(4096, &ring, &p);
  if (e) {
    fprintf(stderr, "io_uring: %s\n", strerror(-e));
    return 1;
  }
  struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
  io_uring_prep_multishot_accept(sqe, ls, NULL, NULL, 0);
  io_uring_sqe_set_data64(sqe, ACCEPT);
  for (;;) {
    io_uring_submit_and_wait(&ring, 1);
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      seen++;
      unsigned long ud = cqe->user_data;
      int res = cqe->res;
      if (ud == ACCEPT) {
        if (res >= 0) {
          struct conn *c = calloc(1, sizeof *c);
          c->fd = res;
          queue_recv(&ring, c);
        }
        continue;
      }
      if (ud & 1) { /* a send: the buffer is free again once it completes */
        if (res < 0)
          fprintf(stderr, "send: %s\n", strerror(-res));
        continue;
      }
      struct conn *c = (struct conn *)ud;
      if (res <= 0) {
        close(c->fd);
        free(c);
        continue;
      }
      c->len += (size_t)res;
      process(c);
      if (c->olen) {
        /* `out` is reused only after the next receive completes, which an
         * unpipelined client sends only after this reply arrived. */
        sqe = io_uring_get_sqe(&ring);
        io_uring_prep_send(sqe, c->fd, c->out, c->olen, 0);
        io_uring_sqe_set_data64(sqe, (unsigned long)c | 1);
        c->olen = 0;
      }
      queue_recv(&ring, c);
    }
    io_uring_cq_advance(&ring, seen);
  }
}
