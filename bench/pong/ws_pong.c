/*
 * ws_pong.c - the physical-limit reference for the WebSocket echo benchmark
 * (bench/ws_gorilla.sh): what one core must spend per echoed message whatever
 * the server is written in.
 *
 * A minimal single-threaded, edge-triggered epoll WebSocket echo server. It
 * answers any request head with a 101 (Sec-WebSocket-Accept computed from the
 * key; nothing else is checked), then echoes every complete client frame as
 * an unmasked server frame with the same opcode (text, binary, ping answered
 * as pong, close echoed and the connection closed). All frames found by one
 * read are answered with one write. Frames larger than its 64 KiB buffer are
 * not supported: the benchmark sends 64-byte messages.
 *
 * Build: cc -O2 -o ws_pong ws_pong.c -lcrypto   Run: ./ws_pong PORT
 *
 * Per message this costs one read + one write + a share of epoll_wait: the
 * least any server can do with one message in flight per connection.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_EVENTS 512
#define BUF_SIZE 65536

static const char GUID[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

struct conn {
    int fd;
    int upgraded;
    size_t len; /* bytes in buf not yet handled */
    unsigned char buf[BUF_SIZE];
};

static unsigned char out[2 * BUF_SIZE];

static void drop(int ep, struct conn *c) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c);
}

static int send_all(int fd, const unsigned char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1; /* a full socket buffer is not expected with one message in flight */
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Answers the request head in c->buf (if complete) with a 101. 1 done, 0 more needed, -1 bad. */
static int handshake(struct conn *c) {
    unsigned char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (!end) return c->len == BUF_SIZE ? -1 : 0;
    unsigned char *k = memmem(c->buf, (size_t)(end - c->buf), "Sec-WebSocket-Key:", 18);
    if (!k) return -1;
    k += 18;
    while (*k == ' ') k++;
    unsigned char *kend = k;
    while (kend < end && *kend != '\r') kend++;
    char joined[128];
    int jl = snprintf(joined, sizeof joined, "%.*s%s", (int)(kend - k), k, GUID);
    if (jl <= 0 || jl >= (int)sizeof joined) return -1;
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1((unsigned char *)joined, (size_t)jl, digest);
    unsigned char accept[64];
    EVP_EncodeBlock(accept, digest, SHA_DIGEST_LENGTH);
    char resp[256];
    int rl = snprintf(resp, sizeof resp,
                      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                      "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
                      accept);
    if (send_all(c->fd, (unsigned char *)resp, (size_t)rl) < 0) return -1;
    size_t used = (size_t)(end + 4 - c->buf);
    memmove(c->buf, c->buf + used, c->len - used);
    c->len -= used;
    c->upgraded = 1;
    return 1;
}

/* Echoes every complete frame in c->buf with one write. 0 ok, -1 close. */
static int echo(struct conn *c) {
    size_t pos = 0, o = 0;
    int closing = 0;
    while (!closing) {
        unsigned char *f = c->buf + pos;
        size_t avail = c->len - pos;
        if (avail < 2) break;
        int opcode = f[0] & 0x0f;
        uint64_t n = f[1] & 0x7f;
        size_t head = 2;
        if (!(f[1] & 0x80)) return -1; /* client frames are masked */
        if (n == 126) {
            if (avail < 4) break;
            n = (uint64_t)f[2] << 8 | f[3];
            head = 4;
        } else if (n == 127) {
            if (avail < 10) break;
            n = 0;
            for (int i = 0; i < 8; i++) n = n << 8 | f[2 + i];
            head = 10;
        }
        if (n > BUF_SIZE - 14) return -1;
        if (avail < head + 4 + n) break;
        const unsigned char *mask = f + head;
        const unsigned char *payload = mask + 4;
        if (opcode == 0x9) opcode = 0xA; /* ping -> pong */
        if (opcode == 0xA && (f[0] & 0x0f) == 0xA) { /* a client pong needs no answer */
            pos += head + 4 + n;
            continue;
        }
        if (opcode == 0x8) closing = 1;
        out[o++] = (unsigned char)(0x80 | opcode);
        if (n < 126) {
            out[o++] = (unsigned char)n;
        } else {
            out[o++] = 126;
            out[o++] = (unsigned char)(n >> 8);
            out[o++] = (unsigned char)n;
        }
        for (uint64_t i = 0; i < n; i++) out[o++] = payload[i] ^ mask[i & 3];
        pos += head + 4 + n;
    }
    if (o > 0 && send_all(c->fd, out, o) < 0) return -1;
    memmove(c->buf, c->buf + pos, c->len - pos);
    c->len -= pos;
    return closing ? -1 : 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(ls, 4096) < 0) {
        perror("ws_pong: bind/listen");
        return 1;
    }
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(ep, events, MAX_EVENTS, -1);
        for (int i = 0; i < n; i++) {
            struct conn *c = events[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct conn *nc = calloc(1, sizeof *nc);
                    nc->fd = fd;
                    struct epoll_event cev = {.events = EPOLLIN | EPOLLET, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                }
                continue;
            }
            for (;;) {
                size_t space = BUF_SIZE - c->len;
                ssize_t r = read(c->fd, c->buf + c->len, space);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                    drop(ep, c);
                    break;
                }
                if (r < 0) break; /* EAGAIN: drained (edge-triggered) */
                c->len += (size_t)r;
                int ok = c->upgraded ? echo(c) : handshake(c);
                if (ok > 0 && c->len > 0) ok = echo(c);
                if (ok < 0) {
                    drop(ep, c);
                    break;
                }
                /* A short read drained the socket: wait for the next edge. */
                if ((size_t)r < space) break;
            }
        }
    }
}
