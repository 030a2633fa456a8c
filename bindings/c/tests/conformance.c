/* Runs the language-neutral conformance transcripts (every .json file of tests/conformance)
 * through parley_call, with the rules of the Rust harness
 * (tests/conformance/harness.rs): strict parsing, "$name" substitution, saves by
 * dotted path, subset matching of objects, element-wise matching of arrays,
 * numbers by value.
 *
 * Usage: conformance <directory> [<file.json> ...]
 * Prints "ok - <file>" or "not ok - <file>" and the mismatches per transcript,
 * then "RESULT passed=P failed=F". */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "parley.h"

/* A growable text buffer for the report of one transcript. */
struct text {
    char *data;
    size_t len;
    size_t cap;
};

static void text_printf(struct text *t, const char *fmt, ...) {
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = (t->len + (size_t)n + 1) * 2;
        char *grown = realloc(t->data, cap);
        if (grown == NULL) {
            return;
        }
        t->data = grown;
        t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->data + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* Compact JSON text of a value, cut at 3000 bytes like the Rust harness. */
static void text_json(struct text *t, const json_t *v) {
    char *dumped = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (dumped == NULL) {
        text_printf(t, "(unprintable)");
        return;
    }
    if (strlen(dumped) > 3000) {
        text_printf(t, "%.3000s...", dumped);
    } else {
        text_printf(t, "%s", dumped);
    }
    free(dumped);
}

static int only_keys(const json_t *obj, const char *const *allowed, const char *what, struct text *err) {
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value) {
        const char *const *a;
        int found = 0;
        (void)value;
        for (a = allowed; *a != NULL; a++) {
            if (strcmp(*a, key) == 0) {
                found = 1;
            }
        }
        if (!found) {
            text_printf(err, "%s has an unknown key \"%s\"", what, key);
            return 0;
        }
    }
    return 1;
}

/* Replaces every string "$name" by the value saved under name; a new reference,
 * or NULL (with the reason in err) when nothing was saved under a name. */
static json_t *substitute(json_t *v, json_t *saved, struct text *err) {
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (s[0] == '$') {
            json_t *value = json_object_get(saved, s + 1);
            if (value == NULL) {
                text_printf(err, "nothing saved under \"%s\"", s + 1);
                return NULL;
            }
            return json_incref(value);
        }
        return json_incref(v);
    }
    if (json_is_array(v)) {
        json_t *out = json_array();
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item) {
            json_t *sub = substitute(item, saved, err);
            if (sub == NULL) {
                json_decref(out);
                return NULL;
            }
            json_array_append_new(out, sub);
        }
        return out;
    }
    if (json_is_object(v)) {
        json_t *out = json_object();
        const char *key;
        json_t *item;
        json_object_foreach(v, key, item) {
            json_t *sub = substitute(item, saved, err);
            if (sub == NULL) {
                json_decref(out);
                return NULL;
            }
            json_object_set_new(out, key, sub);
        }
        return out;
    }
    return json_incref(v);
}

/* Follows a dotted path ("items.0.thread.id"); numeric segments index arrays. */
static json_t *lookup(json_t *v, const char *path) {
    char *copy = strdup(path);
    char *segment, *rest = NULL;
    json_t *cur = v;
    for (segment = strtok_r(copy, ".", &rest); segment != NULL && cur != NULL;
         segment = strtok_r(NULL, ".", &rest)) {
        if (json_is_object(cur)) {
            cur = json_object_get(cur, segment);
        } else if (json_is_array(cur)) {
            char *end;
            unsigned long index = strtoul(segment, &end, 10);
            cur = (*segment != '\0' && *end == '\0' && segment[0] != '-') ? json_array_get(cur, index) : NULL;
        } else {
            cur = NULL;
        }
    }
    free(copy);
    return cur;
}

static void match_value(const json_t *pattern, const json_t *actual, const char *path, struct text *problems);

static void note_problem(struct text *problems, const char *path, const char *fmt, const json_t *want,
                         const json_t *got) {
    if (problems->len > 0) {
        text_printf(problems, "; ");
    }
    text_printf(problems, "%s: ", path[0] != '\0' ? path : "the result");
    if (want == NULL) {
        text_printf(problems, "%s", fmt);
        return;
    }
    text_printf(problems, "expected ");
    text_json(problems, want);
    text_printf(problems, ", got ");
    text_json(problems, got);
}

static char *join_path(const char *path, const char *segment) {
    size_t len = strlen(path) + strlen(segment) + 2;
    char *out = malloc(len);
    if (out != NULL) {
        snprintf(out, len, "%s%s%s", path, path[0] != '\0' ? "." : "", segment);
    }
    return out;
}

/* Objects match as subsets, arrays element-wise with equal length, numbers by
 * value, other scalars by equality. */
static void match_value(const json_t *pattern, const json_t *actual, const char *path, struct text *problems) {
    if (json_is_object(pattern) && json_is_object(actual)) {
        const char *key;
        json_t *want;
        json_object_foreach((json_t *)pattern, key, want) {
            char *sub = join_path(path, key);
            json_t *got = json_object_get(actual, key);
            if (got == NULL) {
                note_problem(problems, sub, "missing", NULL, NULL);
            } else {
                match_value(want, got, sub, problems);
            }
            free(sub);
        }
    } else if (json_is_array(pattern) && json_is_array(actual)) {
        size_t i;
        if (json_array_size(pattern) != json_array_size(actual)) {
            char msg[96];
            snprintf(msg, sizeof msg, "expected %lu items, got %lu", (unsigned long)json_array_size(pattern),
                     (unsigned long)json_array_size(actual));
            note_problem(problems, path, msg, NULL, NULL);
            return;
        }
        for (i = 0; i < json_array_size(pattern); i++) {
            char index[32];
            char *sub;
            snprintf(index, sizeof index, "%lu", (unsigned long)i);
            sub = join_path(path, index);
            match_value(json_array_get(pattern, i), json_array_get(actual, i), sub, problems);
            free(sub);
        }
    } else if (json_is_number(pattern) && json_is_number(actual)) {
        int same = (json_is_integer(pattern) && json_is_integer(actual))
                       ? json_integer_value(pattern) == json_integer_value(actual)
                       : json_number_value(pattern) == json_number_value(actual);
        if (!same) {
            note_problem(problems, path, NULL, pattern, actual);
        }
    } else if (!json_equal((json_t *)pattern, (json_t *)actual)) {
        note_problem(problems, path, NULL, pattern, actual);
    }
}

struct actor {
    const char *name;
    char *secret;
};

/* The outcome of one call: a result, a refusal, or a failure of the host API,
 * shaped so that no `refused` pattern matches it by accident. */
static json_t *call_forum(parley_forum *forum, const char *token, const char *op, const json_t *args, int *ok) {
    char *args_text = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
    char *out = NULL;
    parley_result rc = parley_call(forum, token, op, args_text, &out);
    json_t *value = NULL;
    free(args_text);
    *ok = rc == PARLEY_OK;
    if (rc == PARLEY_OK || rc == PARLEY_REFUSED) {
        value = json_loads(out, JSON_DECODE_ANY, NULL);
        parley_string_free(out);
    }
    if (value == NULL) {
        char host_error[512];
        snprintf(host_error, sizeof host_error, "%s: %s", parley_result_name(rc), parley_last_error());
        *ok = 0;
        value = json_pack("{s:n, s:n, s:s}", "reason", "status", "host_error", host_error);
    }
    return value;
}

/* Checks the shape of one step, as the Rust harness does; 1 when well-formed. */
static int check_step(json_t *step, struct actor *actors, size_t n_actors, struct text *err) {
    static const char *const revoke_keys[] = {"revoke", NULL};
    static const char *const call_keys[] = {"actor", "token", "op", "args", "expect", "save", NULL};
    json_t *actor, *token, *expect, *ok, *refused, *save;
    size_t i;
    const char *who = NULL;
    if (!json_is_object(step)) {
        text_printf(err, "not an object");
        return 0;
    }
    if (json_object_get(step, "revoke") != NULL) {
        if (!only_keys(step, revoke_keys, "a revoke step", err)) {
            return 0;
        }
        who = json_string_value(json_object_get(step, "revoke"));
        if (who == NULL) {
            text_printf(err, "`revoke` is not a string");
            return 0;
        }
    } else {
        if (!only_keys(step, call_keys, "a call step", err)) {
            return 0;
        }
        actor = json_object_get(step, "actor");
        token = json_object_get(step, "token");
        if (!((actor != NULL && token == NULL && (json_is_null(actor) || json_is_string(actor))) ||
              (actor == NULL && json_is_string(token)))) {
            text_printf(err, "needs exactly one of `actor` (a name or null) and `token` (a string)");
            return 0;
        }
        who = json_string_value(actor);
        if (!json_is_string(json_object_get(step, "op"))) {
            text_printf(err, "a call step has no string `op`");
            return 0;
        }
        if (json_object_get(step, "args") == NULL) {
            text_printf(err, "no `args`");
            return 0;
        }
        expect = json_object_get(step, "expect");
        if (!json_is_object(expect)) {
            text_printf(err, "no `expect` object");
            return 0;
        }
        ok = json_object_get(expect, "ok");
        refused = json_object_get(expect, "refused");
        if (json_object_size(expect) != 1 || (ok == NULL && !json_is_object(refused))) {
            text_printf(err, "`expect` must hold exactly one of `ok` and `refused` (an object)");
            return 0;
        }
        if (refused != NULL &&
            (json_object_get(refused, "reason") == NULL || json_object_get(refused, "status") == NULL)) {
            text_printf(err, "`refused` must give `reason` and `status`");
            return 0;
        }
        save = json_object_get(step, "save");
        if (save != NULL) {
            const char *name;
            json_t *path;
            if (refused != NULL) {
                text_printf(err, "`save` on a step expected to be refused");
                return 0;
            }
            if (!json_is_object(save)) {
                text_printf(err, "`save` is not an object");
                return 0;
            }
            json_object_foreach(save, name, path) {
                if (!json_is_string(path)) {
                    text_printf(err, "a `save` path is not a string");
                    return 0;
                }
            }
        }
    }
    if (who != NULL) {
        for (i = 0; i < n_actors; i++) {
            if (strcmp(actors[i].name, who) == 0) {
                return 1;
            }
        }
        text_printf(err, "unknown actor \"%s\"", who);
        return 0;
    }
    return 1;
}

static const char *secret_of(struct actor *actors, size_t n, const char *name) {
    size_t i;
    for (i = 0; i < n; i++) {
        if (strcmp(actors[i].name, name) == 0) {
            return actors[i].secret;
        }
    }
    return NULL;
}

/* Runs one call step; appends its mismatches to report. */
static void run_call(parley_forum *forum, json_t *step, size_t index, struct actor *actors, size_t n_actors,
                     json_t *saved, struct text *report) {
    const char *op = json_string_value(json_object_get(step, "op"));
    json_t *actor = json_object_get(step, "actor");
    json_t *expect = json_object_get(step, "expect");
    json_t *want_ok = json_object_get(expect, "ok");
    json_t *pattern_raw = want_ok != NULL ? want_ok : json_object_get(expect, "refused");
    const char *token = NULL;
    const char *who = "no token";
    struct text problems = {NULL, 0, 0};
    json_t *args, *pattern, *outcome;
    int ok = 0;

    if (actor == NULL) {
        token = json_string_value(json_object_get(step, "token"));
        who = token;
    } else if (json_is_string(actor)) {
        who = json_string_value(actor);
        token = secret_of(actors, n_actors, who);
    }
    args = substitute(json_object_get(step, "args"), saved, &problems);
    pattern = args != NULL ? substitute(pattern_raw, saved, &problems) : NULL;
    if (args == NULL || pattern == NULL) {
        text_printf(report, "  step %lu (%s as %s): %s\n", (unsigned long)index, op, who, problems.data);
        json_decref(args);
        free(problems.data);
        return;
    }

    outcome = call_forum(forum, token, op, args, &ok);
    if (want_ok != NULL && !ok) {
        note_problem(&problems, "", "expected success, got a refusal", NULL, NULL);
    } else if (want_ok == NULL && ok) {
        note_problem(&problems, "", "expected a refusal, got success", NULL, NULL);
    } else {
        match_value(pattern, outcome, "", &problems);
    }
    if (ok) {
        const char *name;
        json_t *path;
        json_object_foreach(json_object_get(step, "save"), name, path) {
            json_t *value = lookup(outcome, json_string_value(path));
            if (value != NULL) {
                json_object_set(saved, name, value);
            } else {
                text_printf(&problems, "%ssave %s: no value at \"%s\"", problems.len > 0 ? "; " : "", name,
                            json_string_value(path));
            }
        }
    }
    if (problems.len > 0) {
        text_printf(report, "  step %lu (%s as %s): %s\n    args:     ", (unsigned long)index, op, who,
                    problems.data);
        text_json(report, args);
        text_printf(report, "\n    expected: {\"%s\":", want_ok != NULL ? "ok" : "refused");
        text_json(report, pattern);
        text_printf(report, "}\n    actual:   {\"%s\":", ok ? "ok" : "refused");
        text_json(report, outcome);
        text_printf(report, "}\n");
    }
    free(problems.data);
    json_decref(args);
    json_decref(pattern);
    json_decref(outcome);
}

/* Runs one transcript file; returns 1 when it passed. */
static int run_transcript(const char *dir, const char *file, size_t *steps_run) {
    static const char *const top_keys[] = {"name", "description", "settings", "tokens", "steps", NULL};
    struct text report = {NULL, 0, 0};
    struct actor actors[64];
    size_t n_actors = 0, i;
    char path[4096], stem[256];
    json_error_t error;
    json_t *doc, *settings, *tokens, *steps, *entry, *saved = json_object();
    parley_forum *forum = NULL;
    char *settings_text;
    const char *name;
    int passed;

    snprintf(path, sizeof path, "%s/%s", dir, file);
    snprintf(stem, sizeof stem, "%s", file);
    if (strlen(stem) > 5) {
        stem[strlen(stem) - 5] = '\0'; /* drop ".json" */
    }
    doc = json_load_file(path, 0, &error);
    if (doc == NULL) {
        text_printf(&report, "  not JSON: %s (line %d)\n", error.text, error.line);
        goto done;
    }
    if (!only_keys(doc, top_keys, "the transcript", &report)) {
        goto done;
    }
    name = json_string_value(json_object_get(doc, "name"));
    if (name == NULL || !json_is_string(json_object_get(doc, "description"))) {
        text_printf(&report, "  the transcript needs a string `name` and `description`\n");
        goto done;
    }
    if (strcmp(name, stem) != 0) {
        text_printf(&report, "  name \"%s\" differs from the file name \"%s\"\n", name, stem);
        goto done;
    }
    settings = json_object_get(doc, "settings");
    tokens = json_object_get(doc, "tokens");
    steps = json_object_get(doc, "steps");
    if ((settings != NULL && !json_is_object(settings)) || !json_is_array(tokens) || !json_is_array(steps) ||
        json_array_size(steps) == 0) {
        text_printf(&report, "  `settings` must be an object, `tokens` and `steps` non-empty arrays\n");
        goto done;
    }

    settings_text = settings != NULL ? json_dumps(settings, JSON_COMPACT) : NULL;
    if (parley_forum_open(NULL, settings_text != NULL ? settings_text : "{}", &forum) != PARLEY_OK) {
        text_printf(&report, "  settings refused: %s\n", parley_last_error());
        free(settings_text);
        goto done;
    }
    free(settings_text);

    json_array_foreach(tokens, i, entry) {
        json_t *spec = json_deep_copy(entry);
        const char *actor = json_string_value(json_object_get(entry, "actor"));
        char *spec_text;
        size_t j;
        if (!json_is_object(entry) || actor == NULL) {
            text_printf(&report, "  tokens[%lu] has no string `actor`\n", (unsigned long)i);
            json_decref(spec);
            goto done;
        }
        if (n_actors == sizeof actors / sizeof actors[0]) {
            text_printf(&report, "  more than %lu actors\n", (unsigned long)n_actors);
            json_decref(spec);
            goto done;
        }
        for (j = 0; j < n_actors; j++) {
            if (strcmp(actors[j].name, actor) == 0) {
                text_printf(&report, "  tokens[%lu]: actor \"%s\" defined twice\n", (unsigned long)i, actor);
                json_decref(spec);
                goto done;
            }
        }
        json_object_del(spec, "actor");
        spec_text = json_dumps(spec, JSON_COMPACT);
        json_decref(spec);
        actors[n_actors].name = actor;
        actors[n_actors].secret = NULL;
        if (parley_token_create(forum, spec_text, &actors[n_actors].secret) != PARLEY_OK) {
            text_printf(&report, "  token of actor \"%s\" refused: %s\n", actor, parley_last_error());
            free(spec_text);
            goto done;
        }
        free(spec_text);
        n_actors++;
    }

    json_array_foreach(steps, i, entry) {
        struct text err = {NULL, 0, 0};
        if (!check_step(entry, actors, n_actors, &err)) {
            text_printf(&report, "  steps[%lu]: %s\n", (unsigned long)i, err.data);
            free(err.data);
            goto done;
        }
    }
    json_array_foreach(steps, i, entry) {
        const char *revoke = json_string_value(json_object_get(entry, "revoke"));
        (*steps_run)++;
        if (revoke != NULL) {
            parley_result rc = parley_token_revoke(forum, secret_of(actors, n_actors, revoke));
            if (rc != PARLEY_OK) {
                text_printf(&report, "  step %lu: revoke %s: %s\n", (unsigned long)i, revoke, parley_last_error());
            }
            continue;
        }
        run_call(forum, entry, i, actors, n_actors, saved, &report);
    }

done:
    passed = report.len == 0;
    printf("%s - %s\n", passed ? "ok" : "not ok", file);
    if (!passed) {
        fputs(report.data, stdout);
    }
    fflush(stdout);
    for (i = 0; i < n_actors; i++) {
        parley_string_free(actors[i].secret);
    }
    parley_forum_free(forum);
    json_decref(saved);
    json_decref(doc);
    free(report.data);
    return passed;
}

static int is_transcript(const struct dirent *entry) {
    size_t len = strlen(entry->d_name);
    return len > 5 && strcmp(entry->d_name + len - 5, ".json") == 0 && entry->d_name[0] != '.';
}

int main(int argc, char **argv) {
    int passed = 0, failed = 0, i;
    size_t steps = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s <directory> [<file.json> ...]\n", argv[0]);
        return 2;
    }
    if (argc > 2) {
        for (i = 2; i < argc; i++) {
            if (run_transcript(argv[1], argv[i], &steps)) {
                passed++;
            } else {
                failed++;
            }
        }
    } else {
        struct dirent **entries;
        int n = scandir(argv[1], &entries, is_transcript, alphasort);
        if (n < 0) {
            perror(argv[1]);
            return 2;
        }
        if (n == 0) {
            printf("not ok - no transcripts in %s\n", argv[1]);
            failed++;
        }
        for (i = 0; i < n; i++) {
            if (run_transcript(argv[1], entries[i]->d_name, &steps)) {
                passed++;
            } else {
                failed++;
            }
            free(entries[i]);
        }
        free(entries);
    }
    printf("# %lu steps in %d transcripts\n", (unsigned long)steps, passed + failed);
    printf("RESULT passed=%d failed=%d\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
