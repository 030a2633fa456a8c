/* Every export of libparley, every result code the C side can provoke, and the
 * ownership of every returned string (run under AddressSanitizer/LeakSanitizer
 * or valgrind, a leak or a double free fails the run).
 *
 * Usage: test_api <fixtures directory> <scratch directory>
 * The fixtures directory holds newer_schema.redb and foreign.redb, written by
 * `cargo run -p parley-c --example fixtures -- <dir>`. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "check.h"
#include "forum_check.h"
#include "json_check.h"
#include "parley.h"

static const char *fixtures_dir;
static const char *scratch_dir;

/* Bytes that are not UTF-8: a lone continuation byte and an overlong form. */
static const char BAD_UTF8[] = "\x80\xc0\xaf";
/* A pointer value no call may write over unless told to. */
#define SENTINEL ((char *)&check_passed)


static char *path_in(const char *dir, const char *name) {
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = malloc(len);
    if (path != NULL) {
        snprintf(path, len, "%s/%s", dir, name);
    }
    return path;
}


static void version_and_result_names(void) {
    static const char *const names[] = {
        "PARLEY_OK",         "PARLEY_REFUSED",        "PARLEY_NULL_PARAMETER",    "PARLEY_INVALID_UTF8",
        "PARLEY_INVALID_JSON", "PARLEY_INVALID_ARGUMENT", "PARLEY_SCHEMA_TOO_NEW", "PARLEY_STORAGE",
        "PARLEY_PANIC",      "PARLEY_POISONED",       "PARLEY_UNKNOWN_OPERATION", "PARLEY_NOT_A_FORUM",
    };
    size_t i;
    const char *version = parley_version();
    CHECK(version != NULL && strlen(version) >= 5);
    CHECK(version == parley_version()); /* static, the same every time */
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK_STR(parley_result_name((parley_result)i), names[i]);
    }
    CHECK(PARLEY_OK == 0 && PARLEY_REFUSED == 1 && PARLEY_NOT_A_FORUM == 11);
}

/* parley_result is a uint32_t: C may hand in any value, and a value that is not
 * a code gets the fixed name PARLEY_UNKNOWN_RESULT, never a crash or NULL. */
static void result_names_of_values_that_are_not_codes(void) {
    static const parley_result not_codes[] = {12, 13, 255, 256, 9999, 0x7fffffffu, 0x80000000u, UINT32_MAX - 1,
                                              UINT32_MAX};
    size_t i;
    const char *unknown = parley_result_name((parley_result)9999);
    CHECK_STR(unknown, "PARLEY_UNKNOWN_RESULT");
    for (i = 0; i < sizeof not_codes / sizeof not_codes[0]; i++) {
        const char *name = parley_result_name(not_codes[i]);
        CHECK_STR(name, "PARLEY_UNKNOWN_RESULT");
        CHECK(name == unknown); /* static: one string for every such value */
    }
    CHECK(sizeof(parley_result) == sizeof(uint32_t));
    CHECK(strcmp(parley_result_name(PARLEY_NOT_A_FORUM), "PARLEY_UNKNOWN_RESULT") != 0);
}

static void free_functions_accept_null(void) {
    parley_forum_free(NULL);
    parley_string_free(NULL);
    CHECK(1);
}

static void open_in_memory_and_free(void) {
    parley_forum *forum = NULL;
    CHECK_RC(parley_forum_open(NULL, NULL, &forum), PARLEY_OK);
    CHECK(forum != NULL);
    CHECK_STR(parley_last_error(), "");
    parley_forum_free(forum);
}

static void open_reports_bad_parameters(void) {
    parley_forum *forum = (parley_forum *)SENTINEL;
    CHECK_RC(parley_forum_open(NULL, NULL, NULL), PARLEY_NULL_PARAMETER);
    CHECK_CONTAINS(parley_last_error(), "out");
    CHECK_RC(parley_forum_open(NULL, "{\"realm\":", &forum), PARLEY_INVALID_JSON);
    CHECK_CONTAINS(parley_last_error(), "settings_json");
    CHECK_RC(parley_forum_open(NULL, BAD_UTF8, &forum), PARLEY_INVALID_UTF8);
    CHECK_RC(parley_forum_open(NULL, "{\"realm\":\"Not A Realm\"}", &forum), PARLEY_INVALID_ARGUMENT);
    CHECK_RC(parley_forum_open(NULL, "{\"colour\":\"blue\"}", &forum), PARLEY_INVALID_ARGUMENT);
    CHECK_CONTAINS(parley_last_error(), "colour");
    CHECK_RC(parley_forum_open(NULL, "null", &forum), PARLEY_INVALID_ARGUMENT);
    CHECK(forum == (parley_forum *)SENTINEL);
}

static void open_refuses_files_that_are_not_forums(void) {
    parley_forum *forum = (parley_forum *)SENTINEL;
    char *newer = path_in(fixtures_dir, "newer_schema.redb");
    char *foreign = path_in(fixtures_dir, "foreign.redb");
    char *text = path_in(scratch_dir, "not_a_database.txt");
    FILE *file = fopen(text, "w");
    CHECK(file != NULL);
    if (file != NULL) {
        fputs("This is a shopping list, not a database.\n", file);
        fclose(file);
    }

    CHECK_RC(parley_forum_open(newer, NULL, &forum), PARLEY_SCHEMA_TOO_NEW);
    CHECK_CONTAINS(parley_last_error(), "schema");
    CHECK_RC(parley_forum_open(foreign, NULL, &forum), PARLEY_NOT_A_FORUM);
    {
        parley_result rc = parley_forum_open(text, NULL, &forum);
        /* redb reads the header and rejects it: a damaged or foreign file. */
        CHECK(rc == PARLEY_STORAGE || rc == PARLEY_NOT_A_FORUM);
        CHECK(strlen(parley_last_error()) > 0);
    }
    CHECK_RC(parley_forum_open("/nonexistent-parley-dir/sub/forum.redb", NULL, &forum), PARLEY_STORAGE);
    CHECK_CONTAINS(parley_last_error(), "nonexistent-parley-dir");
    CHECK(forum == (parley_forum *)SENTINEL);
    free(newer);
    free(foreign);
    free(text);
}

static void a_forum_file_keeps_its_threads(void) {
    char *path = path_in(scratch_dir, "kept.parley");
    parley_forum *forum = NULL;
    char *token = NULL;
    char *out = NULL;
    bool intact = false;
    json_t *result;
    remove(path);

    CHECK_RC(parley_forum_open(path, SETTINGS, &forum), PARLEY_OK);
    {
        /* One file, one open handle: a second open is refused, not shared. */
        parley_forum *second = (parley_forum *)SENTINEL;
        CHECK_RC(parley_forum_open(path, SETTINGS, &second), PARLEY_STORAGE);
        CHECK(second == (parley_forum *)SENTINEL);
    }
    token = make_token(forum, "{\"handle\":\"alice\"}");
    CHECK_RC(parley_call(forum, token, "post", "{\"kind\":\"ask\",\"body\":\"Does this survive a restart?\"}", &out),
             PARLEY_OK);
    parley_string_free(out);
    parley_forum_free(forum);

    CHECK_RC(parley_check_integrity(path, &intact), PARLEY_OK);
    CHECK(intact);

    forum = NULL;
    out = NULL;
    CHECK_RC(parley_forum_open(path, SETTINGS, &forum), PARLEY_OK);
    CHECK_RC(parley_call(forum, token, "get_thread", "{\"thread\":\"th_1\"}", &out), PARLEY_OK);
    result = take_json(out);
    CHECK_STR(str_at(json_object_get(result, "thread"), "topic"), "Does this survive a restart?");
    json_decref(result);
    parley_forum_free(forum);
    parley_string_free(token);
    remove(path);
    free(path);
}

static void check_integrity_reports_bad_parameters(void) {
    bool intact = true;
    CHECK_RC(parley_check_integrity(NULL, &intact), PARLEY_NULL_PARAMETER);
    CHECK_RC(parley_check_integrity("/nonexistent-parley-dir/forum.redb", NULL), PARLEY_NULL_PARAMETER);
    CHECK_RC(parley_check_integrity("/nonexistent-parley-dir/forum.redb", &intact), PARLEY_STORAGE);
    CHECK(intact == true); /* untouched */
}

static void tokens_are_issued_and_checked(void) {
    parley_forum *forum = open_memory();
    char *token = SENTINEL;
    char *alice;
    char *out = NULL;
    json_t *me;

    CHECK_RC(parley_token_create(NULL, "{\"handle\":\"x\"}", &token), PARLEY_NULL_PARAMETER);
    CHECK_CONTAINS(parley_last_error(), "forum");
    CHECK_RC(parley_token_create(forum, NULL, &token), PARLEY_NULL_PARAMETER);
    CHECK_CONTAINS(parley_last_error(), "spec_json");
    CHECK_RC(parley_token_create(forum, "{\"handle\":\"x\"}", NULL), PARLEY_NULL_PARAMETER);
    CHECK_RC(parley_token_create(forum, "{\"handle\":", &token), PARLEY_INVALID_JSON);
    CHECK_RC(parley_token_create(forum, BAD_UTF8, &token), PARLEY_INVALID_UTF8);
    CHECK_RC(parley_token_create(forum, "{\"handle\":\"Not Valid\"}", &token), PARLEY_INVALID_ARGUMENT);
    CHECK_RC(parley_token_create(forum, "{\"handle\":\"x\",\"kind\":\"robot\"}", &token), PARLEY_INVALID_ARGUMENT);
    CHECK_RC(parley_token_create(forum, "{\"handle\":\"x\",\"rights\":[\"fly\"]}", &token), PARLEY_INVALID_ARGUMENT);
    CHECK_RC(parley_token_create(forum, "[]", &token), PARLEY_INVALID_ARGUMENT);
    CHECK(token == SENTINEL);

    alice = make_token(forum, "{\"handle\":\"alice\",\"kind\":\"llm\",\"rights\":[\"read\",\"write\",\"lock\"],\"label\":\"Alice\"}");
    CHECK_RC(parley_call(forum, alice, "whoami", NULL, &out), PARLEY_OK);
    me = take_json(out);
    CHECK_STR(str_at(me, "identity"), "ainotes:alice");
    CHECK_STR(str_at(me, "kind"), "llm");
    CHECK_STR(str_at(me, "label"), "Alice");
    CHECK(json_array_size(json_object_get(me, "rights")) == 3);
    json_decref(me);
    parley_string_free(alice);
    parley_forum_free(forum);
}

/* The enum-like inputs inside JSON (a token's kind and rights, the profiles and
 * durability of the settings, the operation of parley_call, an envelope's kind
 * and state) are range-checked: a value outside the set is refused by name and
 * nothing is handed out or created. */
static void enum_like_inputs_are_range_checked(void) {
    static const char *const bad_specs[] = {
        "{\"handle\":\"x\",\"kind\":\"robot\"}",   "{\"handle\":\"x\",\"kind\":\"LLM\"}",
        "{\"handle\":\"x\",\"kind\":\"\"}",        "{\"handle\":\"x\",\"kind\":0}",
        "{\"handle\":\"x\",\"kind\":1}",             "{\"handle\":\"x\",\"kind\":4294967295}",
        "{\"handle\":\"x\",\"kind\":null}",          "{\"handle\":\"x\",\"kind\":true}",
        "{\"handle\":\"x\",\"kind\":[\"llm\"]}",    "{\"handle\":\"x\",\"rights\":[\"READ\"]}",
        "{\"handle\":\"x\",\"rights\":[0]}",         "{\"handle\":\"x\",\"rights\":[null]}",
        "{\"handle\":\"x\",\"rights\":\"read\"}",   "{\"handle\":\"x\",\"rights\":{\"read\":true}}",
        "{\"handle\":\"x\",\"rights\":[\"read\",\"admin\"]}",
    };
    static const char *const bad_settings[] = {
        "{\"profiles\":[\"dialectik\"]}", "{\"profiles\":\"dialectic\"}", "{\"profiles\":[1]}",
        "{\"profiles\":[null]}",          "{\"durable\":1}",              "{\"durable\":\"true\"}",
        "{\"durable\":null}",             "{\"limits\":{\"page_max\":-1}}", "{\"limits\":{\"pages\":1}}",
    };
    static const char *const bad_operations[] = {"POST", "post ", " post", "", "get_manifest\t", "tools/call"};
    static const char *const bad_envelopes[] = {
        "{\"kind\":\"ASK\",\"body\":\"b\"}",  "{\"kind\":\"vote\",\"body\":\"b\"}",
        "{\"kind\":\"\",\"body\":\"b\"}",     "{\"kind\":3,\"body\":\"b\"}",
        "{\"kind\":\"mark\",\"thread\":1,\"state\":\"done\",\"body\":\"b\"}",
        "{\"kind\":\"mark\",\"thread\":1,\"state\":2,\"body\":\"b\"}",
    };
    parley_forum *forum = open_memory();
    parley_forum *other = (parley_forum *)SENTINEL;
    char *alice = make_token(forum, "{\"handle\":\"alice\"}");
    char *token = SENTINEL;
    char *out = SENTINEL;
    json_t *list, *refusal;
    const char *reason;
    size_t i;

    for (i = 0; i < sizeof bad_specs / sizeof bad_specs[0]; i++) {
        CHECK_RC(parley_token_create(forum, bad_specs[i], &token), PARLEY_INVALID_ARGUMENT);
        CHECK(strlen(parley_last_error()) > 0);
    }
    CHECK(token == SENTINEL);
    for (i = 0; i < sizeof bad_settings / sizeof bad_settings[0]; i++) {
        CHECK_RC(parley_forum_open(NULL, bad_settings[i], &other), PARLEY_INVALID_ARGUMENT);
    }
    CHECK(other == (parley_forum *)SENTINEL);
    for (i = 0; i < sizeof bad_operations / sizeof bad_operations[0]; i++) {
        CHECK_RC(parley_call(forum, alice, bad_operations[i], "{}", &out), PARLEY_UNKNOWN_OPERATION);
    }
    CHECK(out == SENTINEL);
    for (i = 0; i < sizeof bad_envelopes / sizeof bad_envelopes[0]; i++) {
        out = NULL;
        CHECK_RC(parley_call(forum, alice, "post", bad_envelopes[i], &out), PARLEY_REFUSED);
        refusal = take_json(out);
        reason = str_at(refusal, "reason");
        CHECK(reason != NULL && (strcmp(reason, "unknown_kind") == 0 || strcmp(reason, "invalid_body") == 0));
        json_decref(refusal);
    }

    /* Only alice was issued a token, and nothing was posted. */
    out = NULL;
    CHECK_RC(parley_forum_identities(forum, &out), PARLEY_OK);
    list = take_json(out);
    CHECK(json_array_size(list) == 1);
    json_decref(list);
    out = NULL;
    CHECK_RC(parley_call(forum, alice, "list_threads", NULL, &out), PARLEY_OK);
    CHECK_CONTAINS(out, "\"items\":[]");
    parley_string_free(out);
    parley_string_free(alice);
    parley_forum_free(forum);
}

static void tokens_are_revoked(void) {
    parley_forum *forum = open_memory();
    char *bob = make_token(forum, "{\"handle\":\"bob\"}");
    char *out = SENTINEL;
    json_t *refusal;

    CHECK_RC(parley_token_revoke(NULL, bob), PARLEY_NULL_PARAMETER);
    CHECK_RC(parley_token_revoke(forum, NULL), PARLEY_NULL_PARAMETER);
    CHECK_RC(parley_token_revoke(forum, BAD_UTF8), PARLEY_INVALID_UTF8);
    CHECK_RC(parley_token_revoke(forum, "pt_never_issued"), PARLEY_INVALID_ARGUMENT);
    CHECK_RC(parley_token_revoke(forum, bob), PARLEY_OK);
    CHECK_RC(parley_token_revoke(forum, bob), PARLEY_INVALID_ARGUMENT);
    CHECK_CONTAINS(parley_last_error(), "revoked");

    CHECK_RC(parley_call(forum, bob, "whoami", "{}", &out), PARLEY_REFUSED);
    refusal = take_json(out);
    CHECK_STR(str_at(refusal, "reason"), "token_invalid");
    CHECK(json_integer_value(json_object_get(refusal, "status")) == 401);
    json_decref(refusal);
    parley_string_free(bob);
    parley_forum_free(forum);
}

static void call_reports_bad_parameters(void) {
    parley_forum *forum = open_memory();
    char *alice = make_token(forum, "{\"handle\":\"alice\"}");
    char *out = SENTINEL;

    CHECK_RC(parley_call(NULL, alice, "whoami", NULL, &out), PARLEY_NULL_PARAMETER);
    CHECK_RC(parley_call(forum, alice, NULL, NULL, &out), PARLEY_NULL_PARAMETER);
    CHECK_CONTAINS(parley_last_error(), "operation");
    CHECK_RC(parley_call(forum, alice, "whoami", NULL, NULL), PARLEY_NULL_PARAMETER);
    CHECK_CONTAINS(parley_last_error(), "out_json");
    CHECK_RC(parley_call(forum, BAD_UTF8, "whoami", NULL, &out), PARLEY_INVALID_UTF8);
    CHECK_CONTAINS(parley_last_error(), "token");
    CHECK_RC(parley_call(forum, alice, BAD_UTF8, NULL, &out), PARLEY_INVALID_UTF8);
    CHECK_RC(parley_call(forum, alice, "post", BAD_UTF8, &out), PARLEY_INVALID_UTF8);
    CHECK_RC(parley_call(forum, alice, "post", "{\"kind\":\"ask\",", &out), PARLEY_INVALID_JSON);
    CHECK_CONTAINS(parley_last_error(), "args_json");
    CHECK_RC(parley_call(forum, alice, "post", "", &out), PARLEY_INVALID_JSON);
    CHECK_RC(parley_call(forum, alice, "fly", "{}", &out), PARLEY_UNKNOWN_OPERATION);
    CHECK_CONTAINS(parley_last_error(), "fly");
    CHECK(out == SENTINEL);

    /* Nothing was posted by any of the failed calls. */
    out = NULL;
    CHECK_RC(parley_call(forum, alice, "list_threads", NULL, &out), PARLEY_OK);
    CHECK_CONTAINS(out, "\"items\":[]");
    parley_string_free(out);
    parley_string_free(alice);
    parley_forum_free(forum);
}

static void refusals_come_back_as_json(void) {
    parley_forum *forum = open_memory();
    char *reader = make_token(forum, "{\"handle\":\"reader\",\"rights\":[\"read\"]}");
    char *out = NULL;
    json_t *refusal;

    CHECK_RC(parley_call(forum, NULL, "whoami", NULL, &out), PARLEY_REFUSED);
    refusal = take_json(out);
    CHECK_STR(str_at(refusal, "reason"), "token_missing");
    CHECK(json_integer_value(json_object_get(refusal, "status")) == 401);
    CHECK(str_at(refusal, "message") != NULL);
    json_decref(refusal);
    CHECK_CONTAINS(parley_last_error(), "token_missing");

    CHECK_RC(parley_call(forum, reader, "post", "{\"kind\":\"ask\",\"body\":\"May I?\"}", &out), PARLEY_REFUSED);
    refusal = take_json(out);
    CHECK_STR(str_at(refusal, "reason"), "token_right_missing");
    CHECK_STR(str_at(refusal, "right"), "write");
    CHECK(json_integer_value(json_object_get(refusal, "status")) == 403);
    json_decref(refusal);

    /* Arguments that are JSON but not an object are the protocol's to refuse. */
    CHECK_RC(parley_call(forum, reader, "get_thread", "[1]", &out), PARLEY_REFUSED);
    refusal = take_json(out);
    CHECK_STR(str_at(refusal, "reason"), "invalid_argument");
    json_decref(refusal);
    CHECK_RC(parley_call(forum, reader, "post", "\"ask\"", &out), PARLEY_REFUSED);
    refusal = take_json(out);
    CHECK_STR(str_at(refusal, "reason"), "invalid_body");
    json_decref(refusal);

    CHECK_RC(parley_call(forum, NULL, "get_manifest", NULL, &out), PARLEY_OK);
    CHECK_STR(parley_last_error(), "");
    parley_string_free(out);
    parley_string_free(reader);
    parley_forum_free(forum);
}

static void an_exchange_round_trips_unicode(void) {
    parley_forum *forum = open_memory();
    char *alice = make_token(forum, "{\"handle\":\"alice\"}");
    char *bob = make_token(forum, "{\"handle\":\"bob\"}");
    char *out = NULL;
    json_t *result, *thread, *root, *reply;
    const char *answer = "Port 7878 \xe2\x80\x94 see caf\xc3\xa9.md \xf0\x9f\x9a\x80";
    char args[256];

    CHECK_RC(parley_call(forum, alice, "post", "{\"kind\":\"ask\",\"body\":\"Which port?\"}", &out), PARLEY_OK);
    result = take_json(out);
    CHECK_STR(str_at(json_object_get(result, "thread"), "state"), "open");
    json_decref(result);

    snprintf(args, sizeof args, "{\"kind\":\"answer\",\"thread\":\"th_1\",\"body\":\"%s\"}", answer);
    CHECK_RC(parley_call(forum, bob, "post", args, &out), PARLEY_OK);
    result = take_json(out);
    thread = json_object_get(result, "thread");
    CHECK_STR(str_at(thread, "state"), "answered");
    CHECK_STR(str_at(json_object_get(thread, "awaiting"), "identity"), "ainotes:alice");
    json_decref(result);

    CHECK_RC(parley_call(forum, alice, "get_thread", "{\"thread\":1}", &out), PARLEY_OK);
    result = take_json(out);
    CHECK(json_integer_value(json_object_get(json_object_get(result, "thread"), "message_count")) == 2);
    root = json_array_get(json_object_get(result, "messages"), 0);
    reply = json_array_get(json_object_get(root, "replies"), 0);
    CHECK_STR(str_at(reply, "body"), answer);
    json_decref(result);

    CHECK_RC(parley_call(forum, bob, "post", args, &out), PARLEY_REFUSED);
    result = take_json(out);
    CHECK_STR(str_at(result, "reason"), "repeated_body");
    json_decref(result);

    parley_string_free(alice);
    parley_string_free(bob);
    parley_forum_free(forum);
}

static void manifest_and_identities(void) {
    parley_forum *forum = open_memory();
    char *ann = make_token(forum, "{\"handle\":\"ann\",\"kind\":\"human\"}");
    char *out = SENTINEL;
    json_t *manifest, *list, *first;

    CHECK_RC(parley_forum_manifest(NULL, &out), PARLEY_NULL_PARAMETER);
    CHECK_RC(parley_forum_manifest(forum, NULL), PARLEY_NULL_PARAMETER);
    CHECK_RC(parley_forum_identities(NULL, &out), PARLEY_NULL_PARAMETER);
    CHECK_RC(parley_forum_identities(forum, NULL), PARLEY_NULL_PARAMETER);
    CHECK(out == SENTINEL);

    CHECK_RC(parley_forum_manifest(forum, &out), PARLEY_OK);
    manifest = take_json(out);
    CHECK_STR(str_at(manifest, "parley"), "1");
    CHECK_STR(str_at(manifest, "realm"), "ainotes");
    /* The lists grow as the protocol does: each entry is checked, not the count.
     * Every operation listed is one parley_call knows, the core ones included. */
    {
        static const char *const core[] = {"get_manifest", "whoami", "post", "get_thread",
                                           "list_threads", "get_inbox", "get_events"};
        json_t *operations = json_object_get(manifest, "operations");
        json_t *reasons = json_object_get(manifest, "reasons");
        size_t i, j, found = 0;
        for (i = 0; i < json_array_size(operations); i++) {
            const char *op = json_string_value(json_array_get(operations, i));
            char *result = NULL;
            CHECK(op != NULL);
            if (op == NULL) {
                continue;
            }
            for (j = 0; j < sizeof core / sizeof core[0]; j++) {
                found += strcmp(op, core[j]) == 0;
            }
            /* No token: known operations answer or refuse, never "unknown". */
            {
                parley_result rc = parley_call(forum, NULL, op, NULL, &result);
                CHECK(rc == PARLEY_OK || rc == PARLEY_REFUSED);
                parley_string_free(result);
            }
        }
        CHECK(found == sizeof core / sizeof core[0]);
        CHECK(json_array_size(reasons) >= 24);
        for (i = 0; i < json_array_size(reasons); i++) {
            json_t *reason = json_array_get(reasons, i);
            CHECK(str_at(reason, "reason") != NULL);
            CHECK(json_integer_value(json_object_get(reason, "status")) >= 400);
        }
    }
    json_decref(manifest);

    CHECK_RC(parley_forum_identities(forum, &out), PARLEY_OK);
    list = take_json(out);
    CHECK(json_array_size(list) == 1);
    first = json_array_get(list, 0);
    CHECK_STR(str_at(first, "identity"), "human:ann");
    CHECK_STR(str_at(first, "kind"), "human");
    CHECK(json_integer_value(json_object_get(first, "active_tokens")) == 1);
    json_decref(list);
    parley_string_free(ann);
    parley_forum_free(forum);
}

static void mcp_requests_and_notifications(void) {
    parley_forum *forum = open_memory();
    char *alice = make_token(forum, "{\"handle\":\"alice\"}");
    char *out = SENTINEL;
    json_t *response;

    CHECK_RC(parley_mcp_handle(NULL, alice, "{}", &out), PARLEY_NULL_PARAMETER);
    CHECK_RC(parley_mcp_handle(forum, alice, NULL, &out), PARLEY_NULL_PARAMETER);
    CHECK_RC(parley_mcp_handle(forum, alice, "{}", NULL), PARLEY_NULL_PARAMETER);
    CHECK_RC(parley_mcp_handle(forum, BAD_UTF8, "{}", &out), PARLEY_INVALID_UTF8);
    CHECK_RC(parley_mcp_handle(forum, alice, BAD_UTF8, &out), PARLEY_INVALID_UTF8);
    CHECK(out == SENTINEL);

    CHECK_RC(parley_mcp_handle(forum, alice,
                               "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"whoami\","
                               "\"arguments\":{},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                               "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
                               &out),
             PARLEY_OK);
    response = take_json(out);
    CHECK_STR(str_at(response, "jsonrpc"), "2.0");
    CHECK(json_integer_value(json_object_get(response, "id")) == 7);
    CHECK_STR(str_at(json_object_get(json_object_get(response, "result"), "structuredContent"), "identity"),
              "ainotes:alice");
    json_decref(response);

    /* A notification has no answer. */
    out = SENTINEL;
    CHECK_RC(parley_mcp_handle(forum, alice, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &out),
             PARLEY_OK);
    CHECK(out == NULL);

    /* Malformed JSON-RPC is answered inside the protocol: a parse error. */
    CHECK_RC(parley_mcp_handle(forum, NULL, "{\"jsonrpc\":", &out), PARLEY_OK);
    response = take_json(out);
    CHECK(json_integer_value(json_object_get(json_object_get(response, "error"), "code")) == -32700);
    json_decref(response);
    parley_string_free(alice);
    parley_forum_free(forum);
}

static void last_error_is_copied_out(void) {
    char buf[8];
    size_t full;
    parley_forum *forum = NULL;
    CHECK_RC(parley_forum_open(NULL, NULL, NULL), PARLEY_NULL_PARAMETER);
    full = parley_last_error_copy(NULL, 0);
    CHECK(full == strlen(parley_last_error()));
    CHECK(full > sizeof buf);
    memset(buf, 'x', sizeof buf);
    CHECK(parley_last_error_copy(buf, sizeof buf) == full);
    CHECK(buf[sizeof buf - 1] == '\0');
    CHECK(strncmp(buf, parley_last_error(), sizeof buf - 1) == 0);

    CHECK_RC(parley_forum_open(NULL, NULL, &forum), PARLEY_OK);
    CHECK(parley_last_error_copy(buf, sizeof buf) == 0);
    CHECK_STR(buf, "");
    parley_forum_free(forum);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <fixtures directory> <scratch directory>\n", argv[0]);
        return 2;
    }
    fixtures_dir = argv[1];
    scratch_dir = argv[2];

    RUN(version_and_result_names);
    RUN(result_names_of_values_that_are_not_codes);
    RUN(free_functions_accept_null);
    RUN(open_in_memory_and_free);
    RUN(open_reports_bad_parameters);
    RUN(open_refuses_files_that_are_not_forums);
    RUN(a_forum_file_keeps_its_threads);
    RUN(check_integrity_reports_bad_parameters);
    RUN(tokens_are_issued_and_checked);
    RUN(tokens_are_revoked);
    RUN(enum_like_inputs_are_range_checked);
    RUN(call_reports_bad_parameters);
    RUN(refusals_come_back_as_json);
    RUN(an_exchange_round_trips_unicode);
    RUN(manifest_and_identities);
    RUN(mcp_requests_and_notifications);
    RUN(last_error_is_copied_out);
    return FINISH();
}
