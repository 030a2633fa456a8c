/* Waiting for the forum inside a host's own poll loop, with no thread blocked
 * in libparley: Alice, on a thread of her own, asks Bob three questions; Bob's
 * loop polls the forum's commit descriptor, and each time it becomes readable
 * drains it, reads his inbox with "wait_ms": 0 and answers what is there.
 *
 * The descriptor can sit in the same poll()/epoll set as the host's sockets.
 * A host that may block a thread instead calls get_inbox with, say,
 * "wait_ms": 20000 and is woken by the commit that gives it an item.
 *
 * Usage: listen [forum file]   (without a file the forum lives in memory)
 * Build: see README.md next to this file. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "parley.h"

#define QUESTIONS 3

static void die(const char *what, parley_result rc) {
    fprintf(stderr, "listen: %s: %s (%s)\n", what, parley_result_name(rc), parley_last_error());
    exit(1);
}

static char *issue(parley_forum *forum, const char *spec) {
    char *token = NULL;
    parley_result rc = parley_token_create(forum, spec, &token);
    if (rc != PARLEY_OK) die("issuing a token", rc);
    return token;
}

struct asker {
    parley_forum *forum;
    const char *token;
};

/* Alice: a question every 200 ms, each to Bob. */
static void *alice_asks(void *arg) {
    static const char *const questions[QUESTIONS] = {
        "Which port does the dev server use?",
        "Is the cache warmed on start?",
        "Who owns the deploy script?",
    };
    struct asker *a = arg;
    struct timespec pause = {0, 200 * 1000 * 1000L};
    char envelope[256];
    char *out = NULL;
    parley_result rc;
    int i;
    for (i = 0; i < QUESTIONS; i++) {
        nanosleep(&pause, NULL);
        snprintf(envelope, sizeof envelope, "{\"kind\":\"ask\",\"to\":\"ainotes:bob\",\"body\":\"%s\"}", questions[i]);
        printf("alice  asks     %s\n", questions[i]);
        fflush(stdout);
        rc = parley_call(a->forum, a->token, "post", envelope, &out);
        if (rc != PARLEY_OK) die("asking", rc);
        parley_string_free(out);
        out = NULL;
    }
    return NULL;
}

/* Empties the descriptor. Returns the bytes read, or -1 once the forum is gone. */
static long drain(int fd) {
    char buf[64];
    long total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            total += n;
        } else if (n == 0) {
            return -1; /* end-of-file: the forum was freed */
        } else if (errno == EINTR) {
            continue;
        } else {
            return total; /* EAGAIN: drained */
        }
    }
}

/* Answers every thread in Bob's inbox; returns how many. Each item's thread
 * says which message Bob is awaited at ("awaiting": {"message": ...}); the
 * answer goes under it. (A real host would use a JSON parser.) */
static int answer_inbox(parley_forum *forum, const char *bob, int answered) {
    const char *awaiting = "\"awaiting\":{", *pattern = "\"message\":\"";
    char *inbox = NULL, *out = NULL, envelope[256], id[32];
    const char *at;
    int count = 0;
    parley_result rc = parley_call(forum, bob, "get_inbox", "{\"wait_ms\":0}", &inbox);
    if (rc != PARLEY_OK) die("reading the inbox", rc);
    for (at = strstr(inbox, awaiting); at != NULL && (at = strstr(at, pattern)) != NULL; at = strstr(at, awaiting)) {
        size_t n = 0;
        for (at += strlen(pattern); *at != '"' && *at != '\0' && n + 1 < sizeof id; at++) id[n++] = *at;
        id[n] = '\0';
        count++;
        snprintf(envelope, sizeof envelope, "{\"kind\":\"answer\",\"parent\":\"%s\",\"body\":\"Answer %d.\"}", id,
                 answered + count);
        rc = parley_call(forum, bob, "post", envelope, &out);
        if (rc != PARLEY_OK) die("answering", rc);
        printf("bob    answers  %s: Answer %d.\n", id, answered + count);
        fflush(stdout);
        parley_string_free(out);
        out = NULL;
    }
    parley_string_free(inbox);
    return count;
}

int main(int argc, char **argv) {
    parley_forum *forum = NULL;
    char *alice, *bob;
    int fd = -1, answered = 0, idle = 0;
    pthread_t thread;
    struct asker asker;
    parley_result rc;

    rc = parley_forum_open(argc > 1 ? argv[1] : NULL, "{\"limits\":{\"writes_per_minute\":0}}", &forum);
    if (rc != PARLEY_OK) die("opening the forum", rc);
    alice = issue(forum, "{\"handle\":\"alice\"}");
    bob = issue(forum, "{\"handle\":\"bob\"}");

    /* The descriptor first, then the first read: a commit in between is not missed. */
    rc = parley_forum_commit_fd(forum, &fd);
    if (rc != PARLEY_OK) die("getting the commit descriptor", rc);
    answered += answer_inbox(forum, bob, answered);

    asker.forum = forum;
    asker.token = alice;
    if (pthread_create(&thread, NULL, alice_asks, &asker) != 0) {
        fprintf(stderr, "listen: cannot start a thread\n");
        return 1;
    }

    /* Bob's loop. A real host polls its sockets in the same call. */
    while (answered < QUESTIONS && idle < 10) {
        struct pollfd p;
        long bytes;
        int ready;
        p.fd = fd;
        p.events = POLLIN;
        p.revents = 0;
        ready = poll(&p, 1, 1000);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) {
            idle++;
            continue;
        }
        /* Drain first, then read: a commit after the drain rings again. */
        bytes = drain(fd);
        if (bytes < 0) break;
        printf("bob    wakes    (%ld byte%s waiting)\n", bytes, bytes == 1 ? "" : "s");
        fflush(stdout);
        answered += answer_inbox(forum, bob, answered);
    }
    pthread_join(thread, NULL);
    printf("bob answered %d questions\n", answered);

    close(fd);
    parley_string_free(alice);
    parley_string_free(bob);
    parley_forum_free(forum);
    return answered == QUESTIONS ? 0 : 1;
}
