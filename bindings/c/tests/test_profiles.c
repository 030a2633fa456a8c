/* The profiles beyond the core through the C ABI: a conditional mark (SPEC §14.5)
 * refused with the thread's current state, and the guards (SPEC §15) refusing
 * echoes and loops, their limits and switch given in the settings JSON.
 * Run under AddressSanitizer/LeakSanitizer or valgrind, as test_api.c. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "check.h"
#include "forum_check.h"
#include "json_check.h"
#include "parley.h"

/* A pointer value no call may write over unless told to. */
#define SENTINEL ((char *)&check_passed)

/* SPEC §14.5: a mark conditioned on a state the thread has left is refused, and the
 * refusal object carries the thread's current state (issue 38, failure 2). */
static void a_stale_condition_is_refused_with_the_current_state(void) {
    parley_forum *forum = open_memory();
    char *bob = make_token(forum, "{\"handle\":\"bob\"}");
    char *carol = make_token(forum, "{\"handle\":\"carol\"}");
    char *ann = make_token(forum, "{\"handle\":\"ann\",\"kind\":\"human\"}");
    char *out = NULL;
    json_t *result;
    json_t *refusal;

    CHECK_RC(parley_call(forum, bob, "post", "{\"kind\":\"ask\",\"body\":\"Which port?\"}", &out), PARLEY_OK);
    result = take_json(out);
    CHECK_STR(str_at(json_object_get(result, "thread"), "id"), "th_1");
    json_decref(result);
    CHECK_RC(parley_call(forum, carol, "post", "{\"kind\":\"answer\",\"thread\":\"th_1\",\"body\":\"7878.\"}", &out),
             PARLEY_OK);
    parley_string_free(out);
    CHECK_RC(parley_call(forum, bob, "post",
                         "{\"kind\":\"mark\",\"thread\":\"th_1\",\"state\":\"closed\",\"body\":\"Closing.\"}", &out),
             PARLEY_OK);
    parley_string_free(out);

    out = SENTINEL;
    CHECK_RC(parley_call(forum, ann, "post",
                         "{\"kind\":\"mark\",\"thread\":\"th_1\",\"state\":\"closed\","
                         "\"if_state\":\"answered\",\"body\":\"Confirmed.\"}",
                         &out),
             PARLEY_REFUSED);
    CHECK(out != SENTINEL);
    refusal = take_json(out);
    CHECK_STR(str_at(refusal, "reason"), "state_changed");
    CHECK(json_integer_value(json_object_get(refusal, "status")) == 409);
    CHECK_STR(str_at(refusal, "state"), "closed");
    CHECK_STR(str_at(refusal, "field"), "if_state");
    json_decref(refusal);
    CHECK_CONTAINS(parley_last_error(), "state_changed");

    /* Any other value than a state name is invalid_body naming the field. */
    CHECK_RC(parley_call(forum, ann, "post",
                         "{\"kind\":\"mark\",\"thread\":\"th_1\",\"state\":\"closed\","
                         "\"if_state\":7,\"body\":\"Confirmed.\"}",
                         &out),
             PARLEY_REFUSED);
    refusal = take_json(out);
    CHECK_STR(str_at(refusal, "reason"), "invalid_body");
    CHECK_STR(str_at(refusal, "field"), "if_state");
    CHECK(json_object_get(refusal, "state") == NULL);
    json_decref(refusal);

    /* Confirming the state the refusal named succeeds and locks the thread. */
    CHECK_RC(parley_call(forum, ann, "post",
                         "{\"kind\":\"mark\",\"thread\":\"th_1\",\"state\":\"closed\","
                         "\"if_state\":\"closed\",\"body\":\"Confirmed.\"}",
                         &out),
             PARLEY_OK);
    result = take_json(out);
    CHECK(json_is_true(json_object_get(json_object_get(result, "thread"), "locked")));
    json_decref(result);

    parley_string_free(bob);
    parley_string_free(carol);
    parley_string_free(ann);
    parley_forum_free(forum);
}

/* SPEC §15: the guards profile's limits and switch come in the settings JSON; an
 * echo and a thread without progress come back as PARLEY_REFUSED with their
 * reasons, the limit named; with "guards": false neither applies. */
static void the_guards_refuse_echoes_and_loops(void) {
    parley_forum *forum = NULL;
    char *bob, *carol, *out = NULL;
    json_t *result, *refusal;
    char args[160];
    int i;

    CHECK_RC(parley_forum_open(NULL,
                               "{\"limits\":{\"writes_per_minute\":0,\"progress_max_messages\":3,"
                               "\"echo_window\":2}}",
                               &forum),
             PARLEY_OK);
    bob = make_token(forum, "{\"handle\":\"bob\"}");
    carol = make_token(forum, "{\"handle\":\"carol\"}");
    CHECK_RC(parley_call(forum, bob, "post", "{\"kind\":\"ask\",\"body\":\"Deploy today?\"}", &out), PARLEY_OK);
    result = take_json(out);
    CHECK(json_integer_value(json_object_get(json_object_get(result, "thread"), "since_progress")) == 0);
    json_decref(result);
    CHECK_RC(parley_call(forum, carol, "post", "{\"kind\":\"note\",\"thread\":\"th_1\",\"body\":\"deploy TODAY\"}",
                         &out),
             PARLEY_REFUSED);
    refusal = take_json(out);
    CHECK_STR(str_at(refusal, "reason"), "echoed_body");
    CHECK(json_integer_value(json_object_get(refusal, "status")) == 409);
    CHECK_STR(str_at(refusal, "field"), "body");
    CHECK_CONTAINS(str_at(refusal, "message"), "msg_1");
    json_decref(refusal);
    for (i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "{\"kind\":\"note\",\"thread\":\"th_1\",\"body\":\"Carol's note %d.\"}", i);
        CHECK_RC(parley_call(forum, carol, "post", args, &out), PARLEY_OK);
        parley_string_free(out);
    }
    CHECK_RC(parley_call(forum, carol, "post", "{\"kind\":\"note\",\"thread\":\"th_1\",\"body\":\"More.\"}", &out),
             PARLEY_REFUSED);
    refusal = take_json(out);
    CHECK_STR(str_at(refusal, "reason"), "no_progress");
    CHECK_STR(str_at(refusal, "limit"), "progress_max_messages");
    CHECK_CONTAINS(str_at(refusal, "message"), "decide, mark, or ask the person");
    json_decref(refusal);
    CHECK_CONTAINS(parley_last_error(), "no_progress");
    parley_string_free(bob);
    parley_string_free(carol);
    parley_forum_free(forum);

    CHECK_RC(parley_forum_open(NULL, "{\"guards\":false,\"limits\":{\"writes_per_minute\":0}}", &forum), PARLEY_OK);
    bob = make_token(forum, "{\"handle\":\"bob\"}");
    carol = make_token(forum, "{\"handle\":\"carol\"}");
    CHECK_RC(parley_call(forum, bob, "post", "{\"kind\":\"ask\",\"body\":\"Deploy today?\"}", &out), PARLEY_OK);
    result = take_json(out);
    CHECK(json_object_get(json_object_get(result, "thread"), "since_progress") == NULL);
    json_decref(result);
    CHECK_RC(parley_call(forum, carol, "post", "{\"kind\":\"note\",\"thread\":\"th_1\",\"body\":\"deploy TODAY\"}",
                         &out),
             PARLEY_OK);
    parley_string_free(out);
    parley_string_free(bob);
    parley_string_free(carol);
    parley_forum_free(forum);
    forum = NULL;
    CHECK_RC(parley_forum_open(NULL, "{\"guards\":\"off\"}", &forum), PARLEY_INVALID_ARGUMENT);
    CHECK(forum == NULL);
}

int main(void) {
    RUN(a_stale_condition_is_refused_with_the_current_state);
    RUN(the_guards_refuse_echoes_and_loops);
    return FINISH();
}
