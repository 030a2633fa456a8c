/* parley_forum_open on a postgres:// URL (the PostgreSQL backend): a forum that
 * takes tokens and posts and reads them back, two handles on one forum that see
 * each other's writes and revocations, and URLs that fail with PARLEY_STORAGE and
 * a message that names no password.
 *
 * Needs the server of tests/pg/server.sh (PARLEY_TEST_PG, a base URL with a `?`).
 * Without it the test prints a skip line, or fails when PARLEY_TEST_PG_REQUIRED
 * is set. Each forum gets a name of its own: the server is shared. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "json_check.h"
#include "parley.h"

static const char *server;

static const char *SETTINGS = "{\"clock\":\"2026-11-30T12:00:00.000Z\",\"limits\":{\"writes_per_minute\":0}}";
#define SENTINEL ((parley_forum *)&check_passed)

/* The URL of a forum no other test (of this or an earlier run) uses; the caller
 * frees it. */
static char *fresh_url(void) {
    static unsigned counter = 0;
    struct timespec now;
    size_t len = strlen(server) + 64;
    char *url = malloc(len);
    clock_gettime(CLOCK_REALTIME, &now);
    if (url != NULL) {
        snprintf(url, len, "%s%cforum=c%ld_%u_%ld", server, strchr(server, '?') ? '&' : '?', (long)getpid(),
                 counter++, (long)now.tv_nsec);
    }
    return url;
}


static char *make_token(parley_forum *forum, const char *spec) {
    char *token = NULL;
    CHECK_RC(parley_token_create(forum, spec, &token), PARLEY_OK);
    return token;
}

/* Open, issue a token, post, read the thread back, close; open again by the URL
 * and find the thread kept. */
static void a_forum_on_postgres_keeps_its_threads(void) {
    char *url = fresh_url();
    parley_forum *forum = NULL;
    char *alice = NULL;
    char *out = NULL;
    json_t *result;
    char thread[64] = "";

    CHECK_RC(parley_forum_open(url, SETTINGS, &forum), PARLEY_OK);
    CHECK(forum != NULL);
    if (forum == NULL) {
        free(url);
        return;
    }
    CHECK_STR(parley_last_error(), "");
    alice = make_token(forum, "{\"handle\":\"alice\",\"label\":\"Alice\"}");
    CHECK_RC(parley_call(forum, alice, "post", "{\"kind\":\"ask\",\"body\":\"Is the forum in PostgreSQL?\"}", &out),
             PARLEY_OK);
    result = take_json(out);
    if (str_at(json_object_get(result, "thread"), "id") != NULL) {
        snprintf(thread, sizeof thread, "{\"thread\":\"%s\"}", str_at(json_object_get(result, "thread"), "id"));
    }
    CHECK(thread[0] != '\0');
    json_decref(result);

    out = NULL;
    CHECK_RC(parley_call(forum, alice, "get_thread", thread, &out), PARLEY_OK);
    result = take_json(out);
    CHECK_STR(str_at(json_object_get(result, "thread"), "topic"), "Is the forum in PostgreSQL?");
    CHECK_STR(str_at(json_object_get(result, "thread"), "state"), "open");
    json_decref(result);
    parley_forum_free(forum);

    forum = NULL;
    CHECK_RC(parley_forum_open(url, SETTINGS, &forum), PARLEY_OK);
    out = NULL;
    CHECK_RC(parley_call(forum, alice, "get_thread", thread, &out), PARLEY_OK);
    result = take_json(out);
    CHECK_STR(str_at(json_object_get(result, "thread"), "topic"), "Is the forum in PostgreSQL?");
    json_decref(result);
    parley_forum_free(forum);
    parley_string_free(alice);
    free(url);
}

/* Two handles on one URL are two engines on one forum: a post through one is read
 * by the other, and a token revoked through one is refused by the other at once. */
static void two_handles_share_one_forum(void) {
    char *url = fresh_url();
    parley_forum *one = NULL;
    parley_forum *two = NULL;
    char *alice = NULL;
    char *bob = NULL;
    char *out = NULL;
    json_t *result;

    CHECK_RC(parley_forum_open(url, SETTINGS, &one), PARLEY_OK);
    CHECK_RC(parley_forum_open(url, SETTINGS, &two), PARLEY_OK);
    if (one == NULL || two == NULL) {
        parley_forum_free(one);
        parley_forum_free(two);
        free(url);
        return;
    }
    alice = make_token(one, "{\"handle\":\"alice\"}");
    bob = make_token(two, "{\"handle\":\"bob\"}");
    CHECK_RC(parley_call(one, alice, "post", "{\"kind\":\"ask\",\"body\":\"Bob, which port?\",\"to\":\"ainotes:bob\"}",
                         &out),
             PARLEY_OK);
    parley_string_free(out);

    out = NULL;
    CHECK_RC(parley_call(two, bob, "get_inbox", NULL, &out), PARLEY_OK);
    result = take_json(out);
    CHECK(json_array_size(json_object_get(result, "items")) == 1);
    CHECK_STR(str_at(json_object_get(json_object_get(json_array_get(json_object_get(result, "items"), 0), "message"),
                                     "from"),
                     "identity"),
              "ainotes:alice");
    json_decref(result);

    out = NULL;
    CHECK_RC(parley_call(two, alice, "whoami", NULL, &out), PARLEY_OK);
    parley_string_free(out);
    CHECK_RC(parley_token_revoke(one, alice), PARLEY_OK);
    out = NULL;
    CHECK_RC(parley_call(two, alice, "whoami", NULL, &out), PARLEY_REFUSED);
    result = take_json(out);
    CHECK_STR(str_at(result, "reason"), "token_invalid");
    json_decref(result);
    CHECK_RC(parley_token_revoke(two, alice), PARLEY_INVALID_ARGUMENT); /* already revoked */

    parley_forum_free(one);
    parley_forum_free(two);
    parley_string_free(alice);
    parley_string_free(bob);
    free(url);
}

/* A server that is not there, a bad forum name, a URL libpq cannot read: each is
 * PARLEY_STORAGE with a message, the password masked, and *out left alone. */
static void bad_urls_are_storage_errors(void) {
    static const char *const urls[] = {
        "postgres://u:secretpw@localhost/x?host=/nonexistent-parley-dir&connect_timeout=1",
        "postgres://u:secretpw@localhost/x?host=/nonexistent-parley-dir&forum=Not-A-Name",
        "postgres://u:secretpw@localhost/x?no_such_parameter=1",
    };
    static const char *const says[] = {"cannot reach PostgreSQL", "forum name", "not a PostgreSQL URL"};
    size_t i;
    for (i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        parley_forum *forum = SENTINEL;
        CHECK_RC(parley_forum_open(urls[i], SETTINGS, &forum), PARLEY_STORAGE);
        CHECK(forum == SENTINEL);
        CHECK_CONTAINS(parley_last_error(), says[i]);
        CHECK_CONTAINS(parley_last_error(), "u:***@localhost");
        CHECK(strstr(parley_last_error(), "secretpw") == NULL);
    }
}

int main(void) {
    server = getenv("PARLEY_TEST_PG");
    if (server == NULL || server[0] == '\0') {
        if (getenv("PARLEY_TEST_PG_REQUIRED") != NULL) {
            printf("not ok - PARLEY_TEST_PG_REQUIRED is set but PARLEY_TEST_PG is not\n");
            printf("RESULT passed=0 failed=1\n");
            return 1;
        }
        printf("# skipped: no PostgreSQL server (source tests/pg/server.sh && pg_start)\n");
        RUN(bad_urls_are_storage_errors);
        return FINISH();
    }
    RUN(a_forum_on_postgres_keeps_its_threads);
    RUN(two_handles_share_one_forum);
    RUN(bad_urls_are_storage_errors);
    return FINISH();
}
