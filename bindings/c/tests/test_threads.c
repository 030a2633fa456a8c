/* One forum handle shared by several pthreads: every post lands, readers see
 * consistent snapshots meanwhile, and each thread keeps its own last error. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "check.h"
#include "parley.h"

#define WRITERS 8
#define POSTS_PER_WRITER 25
#define READERS 2

struct writer {
    parley_forum *forum;
    char *token;
    int index;
    int posted;
    int failures;
};

struct reader {
    parley_forum *forum;
    char *token;
    int reads;
    int failures;
};

static int writers_done = 0;
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;

static int all_written(void) {
    int done;
    pthread_mutex_lock(&done_lock);
    done = writers_done == WRITERS;
    pthread_mutex_unlock(&done_lock);
    return done;
}

static void *write_notes(void *arg) {
    struct writer *w = arg;
    char args[160];
    char *out = NULL;
    int i;
    for (i = 0; i < POSTS_PER_WRITER; i++) {
        snprintf(args, sizeof args, "{\"kind\":\"note\",\"thread\":\"th_1\",\"body\":\"note %d of writer %d\"}", i, w->index);
        if (parley_call(w->forum, w->token, "post", args, &out) == PARLEY_OK) {
            w->posted++;
            parley_string_free(out);
        } else {
            fprintf(stderr, "writer %d post %d: %s\n", w->index, i, parley_last_error());
            w->failures++;
        }
        /* A failure of this thread leaves its own message, whatever the others do. */
        if (i % 5 == 0) {
            char expected[64];
            snprintf(expected, sizeof expected, "writer-%d-op", w->index);
            if (parley_call(w->forum, w->token, expected, NULL, &out) != PARLEY_UNKNOWN_OPERATION ||
                strstr(parley_last_error(), expected) == NULL) {
                fprintf(stderr, "writer %d: last error \"%s\" is not its own\n", w->index, parley_last_error());
                w->failures++;
            }
        }
    }
    pthread_mutex_lock(&done_lock);
    writers_done++;
    pthread_mutex_unlock(&done_lock);
    return NULL;
}

/* Reads the thread while it grows: the count never goes down and always matches
 * the tree returned with it. */
static void *read_thread(void *arg) {
    struct reader *r = arg;
    json_int_t last = 0;
    int rounds = 0;
    while (!all_written() && rounds < 100000) {
        char *out = NULL;
        json_t *view;
        json_int_t count;
        size_t replies;
        rounds++;
        if (parley_call(r->forum, r->token, "get_thread", "{\"thread\":\"th_1\"}", &out) != PARLEY_OK) {
            fprintf(stderr, "reader: %s\n", parley_last_error());
            r->failures++;
            break;
        }
        view = json_loads(out, 0, NULL);
        parley_string_free(out);
        count = json_integer_value(json_object_get(json_object_get(view, "thread"), "message_count"));
        replies = json_array_size(json_object_get(json_array_get(json_object_get(view, "messages"), 0), "replies"));
        if (count < last || (size_t)count != replies + 1) {
            fprintf(stderr, "reader: message_count %ld after %ld, with %lu replies\n", (long)count, (long)last,
                    (unsigned long)replies);
            r->failures++;
        }
        last = count;
        json_decref(view);
        r->reads++;
    }
    return NULL;
}

static void many_threads_post_to_one_handle(void) {
    parley_forum *forum = NULL;
    pthread_t writer_ids[WRITERS], reader_ids[READERS];
    struct writer writers[WRITERS];
    struct reader readers[READERS];
    char spec[96];
    char *host = NULL;
    char *out = NULL;
    json_t *view, *replies;
    size_t i;
    int w, n, seen[WRITERS][POSTS_PER_WRITER];

    /* Many replies without progress: this test is about threads, not loops (SPEC §15). */
    CHECK_RC(parley_forum_open(NULL, "{\"guards\":false,\"limits\":{\"writes_per_minute\":0}}", &forum), PARLEY_OK);
    CHECK_RC(parley_token_create(forum, "{\"handle\":\"host\"}", &host), PARLEY_OK);
    CHECK_RC(parley_call(forum, host, "post", "{\"kind\":\"ask\",\"body\":\"Roll call: everyone note in.\"}", &out),
             PARLEY_OK);
    parley_string_free(out);

    for (w = 0; w < WRITERS; w++) {
        writers[w].forum = forum;
        writers[w].index = w;
        writers[w].posted = 0;
        writers[w].failures = 0;
        writers[w].token = NULL;
        snprintf(spec, sizeof spec, "{\"handle\":\"writer-%d\"}", w);
        CHECK_RC(parley_token_create(forum, spec, &writers[w].token), PARLEY_OK);
    }
    for (w = 0; w < READERS; w++) {
        readers[w].forum = forum;
        readers[w].token = host;
        readers[w].reads = 0;
        readers[w].failures = 0;
        CHECK(pthread_create(&reader_ids[w], NULL, read_thread, &readers[w]) == 0);
    }
    for (w = 0; w < WRITERS; w++) {
        CHECK(pthread_create(&writer_ids[w], NULL, write_notes, &writers[w]) == 0);
    }
    for (w = 0; w < WRITERS; w++) {
        CHECK(pthread_join(writer_ids[w], NULL) == 0);
        CHECK(writers[w].posted == POSTS_PER_WRITER);
        CHECK(writers[w].failures == 0);
    }
    for (w = 0; w < READERS; w++) {
        CHECK(pthread_join(reader_ids[w], NULL) == 0);
        CHECK(readers[w].failures == 0);
        CHECK(readers[w].reads > 0);
    }

    /* Every post is present, once. */
    memset(seen, 0, sizeof seen);
    CHECK_RC(parley_call(forum, host, "get_thread", "{\"thread\":\"th_1\"}", &out), PARLEY_OK);
    view = json_loads(out, 0, NULL);
    parley_string_free(out);
    CHECK(json_integer_value(json_object_get(json_object_get(view, "thread"), "message_count")) ==
          1 + WRITERS * POSTS_PER_WRITER);
    replies = json_object_get(json_array_get(json_object_get(view, "messages"), 0), "replies");
    CHECK(json_array_size(replies) == WRITERS * POSTS_PER_WRITER);
    for (i = 0; i < json_array_size(replies); i++) {
        const char *body = json_string_value(json_object_get(json_array_get(replies, i), "body"));
        if (body != NULL && sscanf(body, "note %d of writer %d", &n, &w) == 2 && w >= 0 && w < WRITERS && n >= 0 &&
            n < POSTS_PER_WRITER) {
            seen[w][n]++;
        }
    }
    for (w = 0; w < WRITERS; w++) {
        for (n = 0; n < POSTS_PER_WRITER; n++) {
            if (seen[w][n] != 1) {
                fprintf(stderr, "note %d of writer %d is present %d times\n", n, w, seen[w][n]);
                check_case_failed = 1;
            }
        }
    }
    json_decref(view);

    for (w = 0; w < WRITERS; w++) {
        parley_string_free(writers[w].token);
    }
    parley_string_free(host);
    parley_forum_free(forum);
}

int main(void) {
    RUN(many_threads_post_to_one_handle);
    return FINISH();
}
