/* A host for Parley in C: it opens a forum, issues tokens to two agents and a
 * human, runs a short exchange between them, and prints the thread.
 *
 * Usage: chat [forum file]   (without a file the forum lives in memory)
 * Build: see README.md next to this file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parley.h"

#define ID_SIZE 32

/* Prints JSON text indented, two spaces a level. It only moves whitespace
 * around, so it needs no parser: it tracks whether it is inside a string. */
static void print_indented(const char *json) {
    int depth = 0, in_string = 0, escaped = 0, i;
    const char *p;
    for (p = json; *p != '\0'; p++) {
        char c = *p;
        if (in_string) {
            putchar(c);
            if (escaped) {
                escaped = 0;
            } else if (c == '\\') {
                escaped = 1;
            } else if (c == '"') {
                in_string = 0;
            }
            continue;
        }
        switch (c) {
        case '"':
            in_string = 1;
            putchar(c);
            break;
        case '{':
        case '[':
            if (p[1] == (c == '{' ? '}' : ']')) { /* an empty object or list stays on one line */
                putchar(c);
                putchar(*++p);
                break;
            }
            putchar(c);
            putchar('\n');
            depth++;
            for (i = 0; i < depth; i++) fputs("  ", stdout);
            break;
        case '}':
        case ']':
            putchar('\n');
            depth--;
            for (i = 0; i < depth; i++) fputs("  ", stdout);
            putchar(c);
            break;
        case ',':
            putchar(c);
            putchar('\n');
            for (i = 0; i < depth; i++) fputs("  ", stdout);
            break;
        case ':':
            fputs(": ", stdout);
            break;
        default:
            putchar(c);
        }
    }
    putchar('\n');
}

/* Gives up with the library's message: for failures of the host, not refusals. */
static void die(const char *what, parley_result rc) {
    fprintf(stderr, "chat: %s: %s (%s)\n", what, parley_result_name(rc), parley_last_error());
    exit(1);
}

static char *issue(parley_forum *forum, const char *spec) {
    char *token = NULL;
    parley_result rc = parley_token_create(forum, spec, &token);
    if (rc != PARLEY_OK) die("issuing a token", rc);
    return token;
}

/* Copies into `key` the id that follows `"<field>":"` in JSON text when it
 * starts with `kind` (e.g. field "id", kind "msg_"). A post's result holds one
 * message, so the first match is its. */
static void find_id(const char *json, const char *field, const char *kind, char *key, size_t size) {
    char pattern[64];
    const char *at;
    size_t n = 0;
    snprintf(pattern, sizeof pattern, "\"%s\":\"%s", field, kind);
    at = strstr(json, pattern);
    if (at != NULL) {
        for (at += strlen(field) + 4; *at != '"' && *at != '\0' && n + 1 < size; at++) key[n++] = *at;
    }
    key[n] = '\0';
}

/* Posts one envelope as `who` and says what came of it; on success the new
 * message's id goes to `message` and its thread's to `thread` (when not NULL).
 * A refusal is a normal outcome, the protocol's answer, printed like any other. */
static void post(parley_forum *forum, const char *who, const char *token, const char *envelope, char *message,
                 char *thread) {
    char *out = NULL;
    parley_result rc = parley_call(forum, token, "post", envelope, &out);
    if (rc == PARLEY_OK) {
        printf("%-6s posts   %s\n", who, envelope);
        if (message != NULL) find_id(out, "id", "msg_", message, ID_SIZE);
        if (thread != NULL) find_id(out, "thread", "th_", thread, ID_SIZE);
    } else if (rc == PARLEY_REFUSED) {
        printf("%-6s refused %s\n         -> %s\n", who, envelope, parley_last_error());
    } else {
        die("posting", rc);
    }
    parley_string_free(out);
}

int main(int argc, char **argv) {
    parley_forum *forum = NULL;
    char *alice, *bob, *ann, *thread = NULL;
    char ask[ID_SIZE] = "", answer[ID_SIZE] = "", topic[ID_SIZE] = "", envelope[256];
    parley_result rc;

    rc = parley_forum_open(argc > 1 ? argv[1] : NULL, "{\"realm\":\"ainotes\"}", &forum);
    if (rc != PARLEY_OK) die("opening the forum", rc);
    printf("libparley %s\n\n", parley_version());

    alice = issue(forum, "{\"handle\":\"alice\",\"kind\":\"llm\",\"rights\":[\"read\",\"write\"],\"label\":\"Alice\"}");
    bob = issue(forum, "{\"handle\":\"bob\",\"kind\":\"llm\",\"rights\":[\"read\",\"write\"],\"label\":\"Bob\"}");
    ann = issue(forum, "{\"handle\":\"ann\",\"kind\":\"human\"}");

    /* Alice asks: a new thread, open, anyone may answer. */
    post(forum, "alice", alice, "{\"kind\":\"ask\",\"body\":\"Which port does the dev server use?\"}", ask, topic);
    /* Bob answers: the thread is answered (a proposal) and Alice is due. */
    snprintf(envelope, sizeof envelope, "{\"kind\":\"answer\",\"parent\":\"%s\",\"body\":\"Port 7878, set in config/dev.toml.\"}", ask);
    post(forum, "bob", bob, envelope, answer, NULL);
    /* Saying the same thing twice is the commonest loop: refused. */
    snprintf(envelope, sizeof envelope, "{\"kind\":\"note\",\"parent\":\"%s\",\"body\":\"Port 7878, set in config/dev.toml.\"}", ask);
    post(forum, "bob", bob, envelope, NULL, NULL);
    /* Alice may not reply to herself. */
    snprintf(envelope, sizeof envelope, "{\"kind\":\"note\",\"parent\":\"%s\",\"body\":\"Anyone?\"}", ask);
    post(forum, "alice", alice, envelope, NULL, NULL);
    /* Alice confirms under Bob's answer. */
    snprintf(envelope, sizeof envelope, "{\"kind\":\"note\",\"parent\":\"%s\",\"body\":\"Confirmed: 7878 works here.\"}", answer);
    post(forum, "alice", alice, envelope, NULL, NULL);
    /* Ann, a human, closes the thread: confirmed, so it is locked. */
    snprintf(envelope, sizeof envelope, "{\"kind\":\"mark\",\"parent\":\"%s\",\"state\":\"closed\",\"body\":\"Settled, closing.\"}", ask);
    post(forum, "ann", ann, envelope, NULL, NULL);
    /* A locked thread accepts nothing but reopen. */
    snprintf(envelope, sizeof envelope, "{\"kind\":\"note\",\"parent\":\"%s\",\"body\":\"One more thing...\"}", answer);
    post(forum, "bob", bob, envelope, NULL, NULL);

    snprintf(envelope, sizeof envelope, "{\"thread\":\"%s\"}", topic);
    rc = parley_call(forum, ann, "get_thread", envelope, &thread);
    if (rc != PARLEY_OK) die("reading the thread", rc);
    printf("\nThe thread:\n");
    print_indented(thread);

    parley_string_free(thread);
    parley_string_free(alice);
    parley_string_free(bob);
    parley_string_free(ann);
    parley_forum_free(forum);
    return 0;
}
