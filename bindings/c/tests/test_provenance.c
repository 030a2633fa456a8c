/* SPEC §18 through the C ABI: trusted_realms in the settings JSON, a claim
 * exported by one forum (realm north) and imported by another (realm south, which
 * trusts north's key), the refusals of a second import, a tampered bundle and an
 * untrusting forum, and settings that name a realm or key badly. */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "check.h"
#include "parley.h"

/* The JSON of `text`, parsed; NULL (and a failed check) when it is not JSON. */
static json_t *parse(const char *text) {
    json_error_t error;
    json_t *value = text ? json_loads(text, 0, &error) : NULL;
    CHECK(value != NULL);
    return value;
}

/* A forum of `realm` with a trusted_realms object (NULL for none); NULL on failure. */
static parley_forum *open_realm(const char *realm, json_t *trusted) {
    json_t *settings = json_pack("{s:s, s:{s:i}}", "realm", realm, "limits", "writes_per_minute", 0);
    parley_forum *forum = NULL;
    char *text;
    if (trusted) {
        json_object_set(settings, "trusted_realms", trusted);
    }
    text = json_dumps(settings, JSON_COMPACT);
    CHECK_RC(parley_forum_open(NULL, text, &forum), PARLEY_OK);
    free(text);
    json_decref(settings);
    return forum;
}

/* The forum's realm key, from its manifest; the caller frees it. */
static char *realm_key(parley_forum *forum) {
    char *manifest = NULL, *key = NULL;
    json_t *parsed;
    CHECK_RC(parley_forum_manifest(forum, &manifest), PARLEY_OK);
    parsed = parse(manifest);
    if (parsed && json_is_string(json_object_get(parsed, "realm_key"))) {
        key = strdup(json_string_value(json_object_get(parsed, "realm_key")));
    }
    CHECK(key != NULL && strncmp(key, "ed25519:", 8) == 0);
    json_decref(parsed);
    parley_string_free(manifest);
    return key;
}

static char *token(parley_forum *forum, const char *spec) {
    char *secret = NULL;
    CHECK_RC(parley_token_create(forum, spec, &secret), PARLEY_OK);
    return secret;
}

/* `{"bundle": <bundle>}` as text, the caller frees it. */
static char *import_args(json_t *bundle) {
    json_t *args = json_pack("{s:O}", "bundle", bundle);
    char *text = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    return text;
}

/* Calls `import_claim`, expects `want`, and for a refusal the reason `reason`. */
static void import_expect(parley_forum *forum, const char *tok, json_t *bundle, parley_result want,
                          const char *reason) {
    char *args = import_args(bundle), *out = NULL;
    json_t *got;
    CHECK_RC(parley_call(forum, tok, "import_claim", args, &out), want);
    got = parse(out);
    if (got && reason) {
        CHECK_STR(json_string_value(json_object_get(got, "reason")), reason);
    }
    if (got && !reason) {
        json_t *from = json_object_get(json_object_get(got, "message"), "from");
        CHECK_STR(json_string_value(json_object_get(from, "identity")), "south:carol");
        CHECK(json_is_string(json_object_get(json_object_get(got, "claim"), "id")));
    }
    json_decref(got);
    parley_string_free(out);
    free(args);
}

static void a_claim_travels_between_realms(void) {
    parley_forum *north = open_realm("north", NULL), *south = NULL, *east = NULL;
    char *key = realm_key(north), *bob = NULL, *carol = NULL, *dave = NULL, *out = NULL;
    json_t *trusted, *exported, *bundle, *tampered;
    if (!north || !key) {
        free(key);
        parley_forum_free(north);
        return;
    }
    trusted = json_pack("{s:s}", "north", key);
    south = open_realm("south", trusted);
    east = open_realm("east", NULL);
    bob = token(north, "{\"handle\":\"bob\"}");
    carol = token(south, "{\"handle\":\"carol\"}");
    dave = token(east, "{\"handle\":\"dave\"}");

    CHECK_RC(parley_call(north, bob, "post", "{\"kind\":\"assert\",\"body\":\"Port 7878 is free.\"}", &out),
             PARLEY_OK);
    parley_string_free(out);
    out = NULL;
    CHECK_RC(parley_call(north, bob, "export_claim", "{\"claim\":\"cl_1\"}", &out), PARLEY_OK);
    exported = parse(out);
    parley_string_free(out);
    bundle = json_object_get(exported, "bundle");
    CHECK_STR(json_string_value(json_object_get(bundle, "payloadType")), "application/vnd.in-toto+json");
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(bundle, "signatures"), 0), "keyid")),
              key);

    /* East trusts nobody but itself. */
    import_expect(east, dave, bundle, PARLEY_REFUSED, "realm_untrusted");
    /* A payload changed by one character: no longer the statement north signed. */
    tampered = json_deep_copy(bundle);
    {
        char *payload = strdup(json_string_value(json_object_get(tampered, "payload")));
        payload[10] = payload[10] == 'A' ? 'B' : 'A';
        json_object_set_new(tampered, "payload", json_string(payload));
        free(payload);
    }
    import_expect(south, carol, tampered, PARLEY_REFUSED, "bundle_invalid");
    /* South trusts north: the claim lands as carol's, once. */
    import_expect(south, carol, bundle, PARLEY_OK, NULL);
    import_expect(south, carol, bundle, PARLEY_REFUSED, "already_imported");
    out = NULL;
    CHECK_RC(parley_call(south, carol, "get_claim", "{\"claim\":\"cl_1\"}", &out), PARLEY_OK);
    CHECK_CONTAINS(out, "\"imported\":{");
    CHECK_CONTAINS(out, "\"realm\":\"north\"");
    parley_string_free(out);

    json_decref(tampered);
    json_decref(exported);
    json_decref(trusted);
    parley_string_free(bob);
    parley_string_free(carol);
    parley_string_free(dave);
    parley_forum_free(east);
    parley_forum_free(south);
    parley_forum_free(north);
    free(key);
}

static void bad_trusted_realms_are_refused(void) {
    static const char *const bad[] = {
        "{\"trusted_realms\":{\"north\":\"ed25519:short\"}}",
        "{\"trusted_realms\":{\"North!\":\"ed25519:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}}",
        "{\"trusted_realms\":{\"north\":5}}",
        "{\"trusted_realms\":[\"north\"]}",
    };
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        parley_forum *forum = NULL;
        CHECK_RC(parley_forum_open(NULL, bad[i], &forum), PARLEY_INVALID_ARGUMENT);
        CHECK(forum == NULL);
        CHECK_CONTAINS(parley_last_error(), "trusted_realms");
    }
}

static void artifacts_through_the_generic_call(void) {
    parley_forum *forum = open_realm("ainotes", NULL);
    char *bob = token(forum, "{\"handle\":\"bob\"}"), *out = NULL;
    /* "log\n" in base64; its SHA-256 is the ref. */
    CHECK_RC(parley_call(forum, bob, "put_artifact", "{\"content_base64\":\"bG9nCg==\",\"media_type\":\"text/plain\"}",
                         &out),
             PARLEY_OK);
    CHECK_CONTAINS(out, "\"ref\":\"sha256:");
    CHECK_CONTAINS(out, "\"size\":4");
    parley_string_free(out);
    out = NULL;
    CHECK_RC(parley_call(forum, bob, "get_artifact",
                         "{\"ref\":\"sha256:0000000000000000000000000000000000000000000000000000000000000000\"}", &out),
             PARLEY_REFUSED);
    CHECK_CONTAINS(out, "\"artifact_not_found\"");
    parley_string_free(out);
    parley_string_free(bob);
    parley_forum_free(forum);
}

int main(void) {
    RUN(a_claim_travels_between_realms);
    RUN(bad_trusted_realms_are_refused);
    RUN(artifacts_through_the_generic_call);
    return FINISH();
}
