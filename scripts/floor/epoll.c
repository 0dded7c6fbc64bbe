/* Kernel-floor responder on epoll, edge-triggered, one read and one write
 * per ready connection (the system calls memcached and tiercache make per
 * unpipelined request). Usage: floor-epoll PORT */
#include "responder.h"
#include <sys/epoll.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PORT\n", argv[0]);
    return 2;
  }
  int ls = listen_on(atoi(argv[1])), ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL}, evs[1024];
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  for (;;) {
    int n = epoll_wait(ep, evs, 1024, -1);
    for (int i = 0; i < n; i++) {
      struct conn *c = evs[i].data.ptr;
      if (!c) {
        int fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
        if (fd < 0)
          continue;
        c = calloc(1, sizeof *c);
        c->fd = fd;
        struct epoll_event e = {.events = EPOLLIN | EPOLLET, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
        continue;
      }
      ssize_t r = read(c->fd, c->in + c->len, BUF - c->len);
      if (r <= 0) {
        if (r == 0 || errno != EAGAIN) {
          close(c->fd);
          free(c);
        }
        continue;
      }
      c->len += (size_t)r;
      process(c);
      /* An unpipelined client never fills the buffer, so one read drains
       * the socket; the reply is small enough for one write. */
      if (c->olen && write(c->fd, c->out, c->olen) < 0)
        perror("write");
      c->olen = 0;
    }
  }
}
