/* The least a memcached server can do for mc-load's `set` and `get` tests:
 * answer STORED to `set KEY FLAGS EXPTIME BYTES\r\n<data>\r\n` and END to
 * any other line, storing nothing. Shared by epoll.c and uring.c, the
 * kernel-floor responders of scripts/bench-floor.sh; not product code. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF 16384

struct conn {
  int fd;
  size_t len;  /* bytes waiting in `in` */
  size_t olen; /* reply bytes in `out` */
  char in[BUF];
  char out[BUF];
};

/* Consumes every complete command in c->in, appending its reply to c->out. */
static void process(struct conn *c) {
  size_t pos = 0;
  for (;;) {
    char *start = c->in + pos;
    size_t avail = c->len - pos;
    char *nl = memchr(start, '\n', avail);
    if (!nl)
      break;
    size_t line = (size_t)(nl - start) + 1;
    if (start[0] == 's') {
      char *p = nl;
      while (p > start && p[-1] != ' ')
        p--;
      size_t n = strtoul(p, NULL, 10);
      if (avail < line + n + 2)
        break;
      pos += line + n + 2;
      memcpy(c->out + c->olen, "STORED\r\n", 8);
      c->olen += 8;
    } else {
      pos += line;
      memcpy(c->out + c->olen, "END\r\n", 5);
      c->olen += 5;
    }
  }
  memmove(c->in, c->in + pos, c->len - pos);
  c->len -= pos;
}

static int listen_on(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  /* Accepted sockets inherit TCP_NODELAY, as in memcached and tiercache. */
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons(port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 1024)) {
    perror("listen");
    exit(1);
  }
  return s;
}
