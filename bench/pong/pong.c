/*
 * pong.c - the physical-limit reference for fibra's keep-alive benchmarks.
 *
 * A minimal single-threaded, edge-triggered epoll HTTP "server": for every
 * "\r\n\r\n" it sees on a connection it answers one canned 200 response
 * ("Hello, World!", Content-Length 13). It does not parse anything else.
 * Pipelined requests: all complete requests found by one read are answered
 * with one write. Build: cc -O2 -o pong pong.c   Run: ./pong PORT
 *
 * ./pong -w N PORT runs N such processes (for many-core runs), each with its
 * own SO_REUSEPORT listener, so the kernel spreads connections over them; the
 * extra processes are forked children that die with the first one.
 *
 * ./pong -t PORT starts one more thread, which only sleeps: the floor of a
 * multi-threaded server. A process whose threads share the descriptor table
 * (every threaded server: fibra's workers, its control thread) pays for a
 * reference count on the socket's file in each read and write (the kernel's
 * fdget/fput); a single-threaded process borrows the file without one.
 *
 * Per keep-alive request this costs one read + one write + a share of
 * epoll_wait; everything else in the benchmark is the kernel's TCP path,
 * which is what the ratios in docs/BENCHMARKS.md are measured against.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 512
#define BUF_SIZE 16384
#define MAX_PIPELINE 256

static const char PONG_RESPONSE[] =
    "HTTP/1.1 200 OK\r\n"
    "Server: pong\r\n"
    "Content-Type: text/plain\r\n"
    "Content-Length: 13\r\n"
    "\r\n"
    "Hello, World!";

/* The answer sent: PONG_RESPONSE, or with -d the bytes of fibra hello's
 * (a Date field, no Server field). */
#define MAX_RESPONSE 160
static char RESPONSE[MAX_RESPONSE];
static size_t RESPONSE_LEN;

/* Per-connection state: how many bytes of a possibly split "\r\n\r\n" we
 * have already matched at the end of the previous read (0..3). */
struct conn {
    int fd;
    int matched;
};

static char out[MAX_RESPONSE * MAX_PIPELINE];

/* Counts complete request terminators in buf, carrying a partial match of
 * "\r\n\r\n" across reads in *matched. */
static int count_requests(const char *buf, ssize_t n, int *matched) {
    static const char term[4] = {'\r', '\n', '\r', '\n'};
    int m = *matched, count = 0;
    for (ssize_t i = 0; i < n; i++) {
        char c = buf[i];
        if (c == term[m]) {
            if (++m == 4) {
                count++;
                m = 0;
            }
        } else {
            m = (c == '\r') ? 1 : 0;
        }
    }
    *matched = m;
    return count;
}

static int write_all(int fd, const char *p, size_t len) {
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            /* A benchmark client that stops reading gets disconnected. */
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static void close_conn(struct conn *c) {
    close(c->fd);
    free(c);
}

/* Reads until EAGAIN (edge-triggered) and answers every complete request. */
static void on_readable(struct conn *c) {
    char buf[BUF_SIZE];
    for (;;) {
        ssize_t n = read(c->fd, buf, sizeof buf);
        if (n == 0) {
            close_conn(c);
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            close_conn(c);
            return;
        }
        int reqs = count_requests(buf, n, &c->matched);
        while (reqs > 0) {
            int batch = reqs > MAX_PIPELINE ? MAX_PIPELINE : reqs;
            for (int i = 0; i < batch; i++)
                memcpy(out + (size_t)i * RESPONSE_LEN, RESPONSE, RESPONSE_LEN);
            if (write_all(c->fd, out, (size_t)batch * RESPONSE_LEN) < 0) {
                close_conn(c);
                return;
            }
            reqs -= batch;
        }
        /* A short read means the socket is drained: skip the EAGAIN read. */
        if ((size_t)n < sizeof buf)
            return;
    }
}

/* Binds the loopback listener, with SO_REUSEPORT when reuseport is set;
 * exits on failure. */
static int listen_on(int port, int reuseport) {
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd < 0) {
        perror("socket");
        exit(1);
    }
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (reuseport && setsockopt(lfd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) {
        perror("SO_REUSEPORT");
        exit(1);
    }
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        perror("bind");
        exit(1);
    }
    if (listen(lfd, 4096) < 0) {
        perror("listen");
        exit(1);
    }
    return lfd;
}

/* The event loop of one process: accepts on lfd and answers forever. */
static int serve(int lfd) {
    int one = 1;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
        perror("epoll_create1");
        return 1;
    }
    /* The listener is level-triggered so a burst larger than one accept
     * loop is picked up on the next wait; data sockets are edge-triggered. */
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);

    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(ep, events, MAX_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("epoll_wait");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = events[i].data.ptr;
            if (c == NULL) {
                for (int k = 0; k < 64; k++) {
                    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0)
                        break;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct conn *nc = malloc(sizeof *nc);
                    if (nc == NULL) {
                        close(fd);
                        continue;
                    }
                    nc->fd = fd;
                    nc->matched = 0;
                    struct epoll_event cev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
                                              .data.ptr = nc};
                    /* ADD reports data that is already queued, so no eager read. */
                    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev) < 0)
                        close_conn(nc);
                }
            } else if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)) {
                on_readable(c);
            }
        }
    }
}

static void *sleeper(void *arg) {
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* With -d: the answer fibra hello sends for /plaintext, byte for byte in
 * length (115 bytes: a Date field instead of Server), its date the start-up
 * time. The cost of the answer's bytes, without a clock: a floor, not a server. */
static void use_fibra_answer(void) {
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    int n = snprintf(RESPONSE, sizeof RESPONSE,
                     "HTTP/1.1 200 OK\r\n"
                     "Content-Type: text/plain\r\n"
                     "Date: %s\r\n"
                     "Content-Length: 13\r\n"
                     "\r\n"
                     "Hello, World!",
                     date);
    RESPONSE_LEN = (size_t)n;
}

int main(int argc, char **argv) {
    int procs = 0;
    memcpy(RESPONSE, PONG_RESPONSE, sizeof PONG_RESPONSE - 1);
    RESPONSE_LEN = sizeof PONG_RESPONSE - 1;
    while (argc > 1 && (strcmp(argv[1], "-t") == 0 || strcmp(argv[1], "-d") == 0)) {
        if (strcmp(argv[1], "-d") == 0) {
            use_fibra_answer();
        } else {
            pthread_t t;
            if (pthread_create(&t, NULL, sleeper, NULL) != 0) {
                perror("pthread_create");
                return 1;
            }
        }
        argv += 1;
        argc -= 1;
    }
    if (argc > 2 && strcmp(argv[1], "-w") == 0) {
        procs = atoi(argv[2]);
        if (procs < 1) {
            fprintf(stderr, "usage: pong [-t] [-d] [-w PROCESSES] [PORT]\n");
            return 2;
        }
        argv += 2;
        argc -= 2;
    }
    int port = argc > 1 ? atoi(argv[1]) : 8080;
    signal(SIGPIPE, SIG_IGN);
    if (procs == 0)
        return serve(listen_on(port, 0));

    /* The first listener is bound before forking, so a port in use fails at once. */
    int lfd = listen_on(port, 1);
    pid_t parent = getpid();
    for (int i = 1; i < procs; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                return 1;
            close(lfd);
            return serve(listen_on(port, 1));
        }
    }
    return serve(lfd);
}
