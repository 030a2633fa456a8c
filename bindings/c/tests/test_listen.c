/* Waiting from C (SPEC section 14.2): a blocking parley_call with "wait_ms"
 * woken by a post from another thread, a host's poll loop on the commit
 * descriptor, parley_forum_end_waits, and what freeing the forum does to the
 * descriptors. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "parley.h"

#define SETTINGS "{\"limits\":{\"writes_per_minute\":0}}"
#define ASK_BOB "{\"kind\":\"ask\",\"to\":\"ainotes:bob\",\"body\":\"bob, which port?\"}"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1000.0 + (double)t.tv_nsec / 1e6;
}

static void sleep_ms(long ms) {
    struct timespec t;
    t.tv_sec = ms / 1000;
    t.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&t, NULL);
}

/* Reads what the descriptor holds: the number of bytes, or -1 at end-of-file. */
static long drain(int fd) {
    char buf[64];
    long total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            total += n;
        } else if (n == 0) {
            return -1;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return total;
        } else {
            perror("read");
            return -2;
        }
    }
}

/* Waits up to `ms` for the descriptor to become readable. */
static int readable(int fd, int ms) {
    struct pollfd p;
    int rc;
    p.fd = fd;
    p.events = POLLIN;
    p.revents = 0;
    do {
        rc = poll(&p, 1, ms);
    } while (rc < 0 && errno == EINTR);
    return rc == 1 && (p.revents & (POLLIN | POLLHUP)) != 0;
}

static char *issue(parley_forum *forum, const char *spec) {
    char *token = NULL;
    CHECK_RC(parley_token_create(forum, spec, &token), PARLEY_OK);
    return token;
}

/* Runs a call and returns its JSON (NULL if none came back); *rc gets the code. */
static json_t *call(parley_forum *forum, const char *token, const char *op, const char *args, parley_result *rc) {
    char *out = NULL;
    json_t *value = NULL;
    *rc = parley_call(forum, token, op, args, &out);
    if (out != NULL) {
        value = json_loads(out, 0, NULL);
        parley_string_free(out);
    }
    return value;
}

static size_t item_count(json_t *result) {
    return json_array_size(json_object_get(result, "items"));
}

/* A post from another thread, after a pause. */
struct poster {
    parley_forum *forum;
    const char *token;
    long delay_ms;
    parley_result rc;
};

static void *post_later(void *arg) {
    struct poster *p = arg;
    char *out = NULL;
    sleep_ms(p->delay_ms);
    p->rc = parley_call(p->forum, p->token, "post", ASK_BOB, &out);
    parley_string_free(out);
    return NULL;
}

/* A waiting read in another thread. */
struct waiter {
    parley_forum *forum;
    const char *token;
    const char *args;
    parley_result rc;
    char *out;
    double took_ms;
};

static void *wait_for_inbox(void *arg) {
    struct waiter *w = arg;
    double start = now_ms();
    w->out = NULL;
    w->rc = parley_call(w->forum, w->token, "get_inbox", w->args, &w->out);
    w->took_ms = now_ms() - start;
    return NULL;
}

static void a_poll_loop_wakes_drains_and_reads_what_another_thread_posted(void) {
    parley_forum *forum = NULL;
    char *alice, *bob;
    int fd = -1, flags, found = 0, rounds = 0;
    pthread_t thread;
    struct poster poster;
    double deadline;

    CHECK_RC(parley_forum_open(NULL, SETTINGS, &forum), PARLEY_OK);
    alice = issue(forum, "{\"handle\":\"alice\"}");
    bob = issue(forum, "{\"handle\":\"bob\"}");
    CHECK_RC(parley_forum_commit_fd(forum, &fd), PARLEY_OK);
    CHECK(fd >= 0);
    flags = fcntl(fd, F_GETFL);
    CHECK(flags >= 0 && (flags & O_NONBLOCK) != 0);
    CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    CHECK(drain(fd) == 0);
    CHECK(!readable(fd, 0));

    poster.forum = forum;
    poster.token = alice;
    poster.delay_ms = 100;
    poster.rc = PARLEY_STORAGE;
    CHECK(pthread_create(&thread, NULL, post_later, &poster) == 0);

    /* The host's loop: poll, drain first, then read again with wait_ms 0. */
    deadline = now_ms() + 15000;
    while (!found && now_ms() < deadline) {
        parley_result rc;
        json_t *inbox;
        if (!readable(fd, 1000)) continue;
        rounds++;
        CHECK(drain(fd) > 0);
        inbox = call(forum, bob, "get_inbox", "{\"wait_ms\":0}", &rc);
        CHECK_RC(rc, PARLEY_OK);
        if (item_count(inbox) > 0) {
            found = 1;
            CHECK(json_is_string(
                json_object_get(json_object_get(json_array_get(json_object_get(inbox, "items"), 0), "thread"), "id")));
        }
        json_decref(inbox);
    }
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_RC(poster.rc, PARLEY_OK);
    CHECK(found);
    CHECK(rounds >= 1);
    CHECK(!readable(fd, 0));

    CHECK(close(fd) == 0);
    parley_string_free(alice);
    parley_string_free(bob);
    parley_forum_free(forum);
}

static void a_blocking_call_is_woken_by_a_post_from_another_thread(void) {
    parley_forum *forum = NULL;
    char *alice, *bob;
    pthread_t thread;
    struct waiter waiter;
    parley_result rc;
    json_t *posted, *inbox;
    char *manifest = NULL;

    CHECK_RC(parley_forum_open(NULL, SETTINGS, &forum), PARLEY_OK);
    alice = issue(forum, "{\"handle\":\"alice\"}");
    bob = issue(forum, "{\"handle\":\"bob\"}");
    waiter.forum = forum;
    waiter.token = bob;
    waiter.args = "{\"wait_ms\":20000}";
    CHECK(pthread_create(&thread, NULL, wait_for_inbox, &waiter) == 0);
    sleep_ms(100);

    /* Meanwhile the handle serves this thread: the waiter holds no lock. */
    CHECK_RC(parley_forum_manifest(forum, &manifest), PARLEY_OK);
    parley_string_free(manifest);
    inbox = call(forum, bob, "get_inbox", NULL, &rc);
    CHECK_RC(rc, PARLEY_OK);
    CHECK(item_count(inbox) == 0);
    json_decref(inbox);

    posted = call(forum, alice, "post", ASK_BOB, &rc);
    CHECK_RC(rc, PARLEY_OK);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_RC(waiter.rc, PARLEY_OK);
    CHECK(waiter.took_ms < 15000);
    inbox = json_loads(waiter.out != NULL ? waiter.out : "null", 0, NULL);
    CHECK(item_count(inbox) == 1);
    CHECK(json_equal(json_object_get(json_object_get(json_array_get(json_object_get(inbox, "items"), 0), "thread"), "id"),
                     json_object_get(json_object_get(posted, "thread"), "id")));
    json_decref(inbox);
    json_decref(posted);
    parley_string_free(waiter.out);

    parley_string_free(alice);
    parley_string_free(bob);
    parley_forum_free(forum);
}

static void wait_ms_out_of_range_is_refused_as_an_invalid_argument(void) {
    static const char *const bad[] = {"{\"wait_ms\":30001}", "{\"wait_ms\":-1}", "{\"wait_ms\":2.5}",
                                      "{\"wait_ms\":\"10\"}", "{\"wait_ms\":[]}"};
    parley_forum *forum = NULL, *quiet = NULL;
    char *bob, *carol;
    size_t i;
    parley_result rc;
    json_t *refusal, *manifest;
    char *text = NULL;

    CHECK_RC(parley_forum_open(NULL, SETTINGS, &forum), PARLEY_OK);
    bob = issue(forum, "{\"handle\":\"bob\"}");
    CHECK_RC(parley_forum_manifest(forum, &text), PARLEY_OK);
    manifest = json_loads(text, 0, NULL);
    parley_string_free(text);
    CHECK(json_integer_value(json_object_get(json_object_get(manifest, "limits"), "wait_max_ms")) == 30000);
    json_decref(manifest);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        refusal = call(forum, bob, "get_inbox", bad[i], &rc);
        CHECK_RC(rc, PARLEY_REFUSED);
        CHECK_STR(json_string_value(json_object_get(refusal, "reason")), "invalid_argument");
        CHECK_STR(json_string_value(json_object_get(refusal, "field")), "wait_ms");
        CHECK(json_integer_value(json_object_get(refusal, "status")) == 400);
        CHECK_CONTAINS(parley_last_error(), "invalid_argument");
        json_decref(refusal);
    }
    /* The largest value is accepted; with a thread to list it returns at once. */
    json_decref(call(forum, bob, "post", "{\"kind\":\"ask\",\"body\":\"Listed?\"}", &rc));
    CHECK_RC(rc, PARLEY_OK);
    refusal = call(forum, bob, "list_threads", "{\"wait_ms\":30000}", &rc);
    CHECK_RC(rc, PARLEY_OK);
    CHECK(item_count(refusal) == 1);
    json_decref(refusal);

    /* Without the listen profile, wait_ms is an unknown argument. */
    CHECK_RC(parley_forum_open(NULL, "{\"profiles\":[\"dialectic\"]}", &quiet), PARLEY_OK);
    carol = issue(quiet, "{\"handle\":\"carol\"}");
    refusal = call(quiet, carol, "get_inbox", "{\"wait_ms\":10}", &rc);
    CHECK_RC(rc, PARLEY_REFUSED);
    CHECK_STR(json_string_value(json_object_get(refusal, "reason")), "invalid_argument");
    json_decref(refusal);

    parley_string_free(bob);
    parley_string_free(carol);
    parley_forum_free(forum);
    parley_forum_free(quiet);
}

static void commit_fd_and_end_waits_check_their_parameters(void) {
    parley_forum *forum = NULL;
    int fd = -7;

    CHECK_RC(parley_forum_open(NULL, SETTINGS, &forum), PARLEY_OK);
    CHECK_RC(parley_forum_commit_fd(NULL, &fd), PARLEY_NULL_PARAMETER);
    CHECK_CONTAINS(parley_last_error(), "forum");
    CHECK(fd == -7);
    CHECK_RC(parley_forum_commit_fd(forum, NULL), PARLEY_NULL_PARAMETER);
    CHECK_CONTAINS(parley_last_error(), "out_fd");
    CHECK_RC(parley_forum_end_waits(NULL), PARLEY_NULL_PARAMETER);
    CHECK_RC(parley_forum_commit_fd(forum, &fd), PARLEY_OK);
    CHECK_STR(parley_last_error(), "");
    CHECK(fd >= 0);
    CHECK(close(fd) == 0);
    parley_forum_free(forum);
}

static void end_waits_releases_a_blocked_call_and_rings_the_descriptor(void) {
    parley_forum *forum = NULL;
    char *bob;
    int fd = -1;
    pthread_t thread;
    struct waiter waiter;
    json_t *inbox;
    double start;

    CHECK_RC(parley_forum_open(NULL, SETTINGS, &forum), PARLEY_OK);
    bob = issue(forum, "{\"handle\":\"bob\"}");
    CHECK_RC(parley_forum_commit_fd(forum, &fd), PARLEY_OK);
    waiter.forum = forum;
    waiter.token = bob;
    waiter.args = "{\"wait_ms\":30000}";
    CHECK(pthread_create(&thread, NULL, wait_for_inbox, &waiter) == 0);
    sleep_ms(100);
    CHECK(!readable(fd, 0));

    start = now_ms();
    CHECK_RC(parley_forum_end_waits(forum), PARLEY_OK);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(now_ms() - start < 10000);
    CHECK_RC(waiter.rc, PARLEY_OK);
    inbox = json_loads(waiter.out != NULL ? waiter.out : "null", 0, NULL);
    CHECK(json_is_array(json_object_get(inbox, "items")) && item_count(inbox) == 0);
    json_decref(inbox);
    parley_string_free(waiter.out);
    CHECK(readable(fd, 0));
    CHECK(drain(fd) > 0);

    /* Later waits return at once too. */
    waiter.args = "{\"wait_ms\":30000}";
    wait_for_inbox(&waiter);
    CHECK_RC(waiter.rc, PARLEY_OK);
    CHECK(waiter.took_ms < 10000);
    parley_string_free(waiter.out);
    CHECK_RC(parley_forum_end_waits(forum), PARLEY_OK);

    /* Freeing after the threads are joined: a last byte, then end-of-file. */
    parley_forum_free(forum);
    CHECK(readable(fd, 1000));
    CHECK(drain(fd) == -1);
    CHECK(close(fd) == 0);
    parley_string_free(bob);
}

static void freeing_the_forum_makes_every_descriptor_read_eof(void) {
    parley_forum *forum = NULL;
    char *alice;
    int fds[3], i;
    parley_result rc;

    CHECK_RC(parley_forum_open(NULL, SETTINGS, &forum), PARLEY_OK);
    alice = issue(forum, "{\"handle\":\"alice\"}");
    for (i = 0; i < 3; i++) {
        fds[i] = -1;
        CHECK_RC(parley_forum_commit_fd(forum, &fds[i]), PARLEY_OK);
    }
    json_decref(call(forum, alice, "post", "{\"kind\":\"ask\",\"body\":\"Rung?\"}", &rc));
    CHECK_RC(rc, PARLEY_OK);
    for (i = 0; i < 3; i++) {
        CHECK(readable(fds[i], 0));
        CHECK(drain(fds[i]) >= 1);
    }
    parley_forum_free(forum);
    for (i = 0; i < 3; i++) {
        CHECK(readable(fds[i], 1000));
        CHECK(drain(fds[i]) == -1);
        CHECK(close(fds[i]) == 0);
    }
    parley_string_free(alice);
}

/* A C host keeps SIGPIPE's default action, which kills the process: a commit
 * after the host closed its descriptor, drained or not, must not raise it. */
static void a_descriptor_the_host_closed_raises_no_sigpipe(void) {
    parley_forum *forum = NULL;
    char *alice;
    int fd = -1, fresh = -1, kept = -1, i;
    char body[128];
    parley_result rc;
    struct sigaction action;

    CHECK(sigaction(SIGPIPE, NULL, &action) == 0);
    CHECK(action.sa_handler == SIG_DFL);
    CHECK_RC(parley_forum_open(NULL, SETTINGS, &forum), PARLEY_OK);
    alice = issue(forum, "{\"handle\":\"alice\"}");
    CHECK_RC(parley_forum_commit_fd(forum, &fd), PARLEY_OK);
    CHECK_RC(parley_forum_commit_fd(forum, &fresh), PARLEY_OK);
    CHECK_RC(parley_forum_commit_fd(forum, &kept), PARLEY_OK);
    json_decref(call(forum, alice, "post", "{\"kind\":\"ask\",\"body\":\"Unread?\"}", &rc));
    CHECK_RC(rc, PARLEY_OK);
    CHECK(close(fd) == 0); /* with a byte unread */
    CHECK(drain(fresh) >= 1);
    CHECK(close(fresh) == 0); /* drained */
    for (i = 0; i < 3; i++) {
        snprintf(body, sizeof body, "{\"kind\":\"ask\",\"body\":\"still alive %d?\"}", i);
        json_decref(call(forum, alice, "post", body, &rc));
        CHECK_RC(rc, PARLEY_OK);
    }
    CHECK(drain(kept) >= 1);
    CHECK(close(kept) == 0);
    parley_string_free(alice);
    parley_forum_free(forum);
}

int main(void) {
    RUN(a_poll_loop_wakes_drains_and_reads_what_another_thread_posted);
    RUN(a_blocking_call_is_woken_by_a_post_from_another_thread);
    RUN(wait_ms_out_of_range_is_refused_as_an_invalid_argument);
    RUN(commit_fd_and_end_waits_check_their_parameters);
    RUN(end_waits_releases_a_blocked_call_and_rings_the_descriptor);
    RUN(freeing_the_forum_makes_every_descriptor_read_eof);
    RUN(a_descriptor_the_host_closed_raises_no_sigpipe);
    return FINISH();
}
