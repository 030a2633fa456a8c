/* A forum in memory and tokens on it, for the C tests of libparley. */
#ifndef PARLEY_TEST_FORUM_CHECK_H
#define PARLEY_TEST_FORUM_CHECK_H

#include "check.h"
#include "parley.h"

/* A fixed clock and no rate limit: the tests post in bursts. */
static const char *SETTINGS = "{\"clock\":\"2026-11-30T12:00:00.000Z\",\"limits\":{\"writes_per_minute\":0}}";

static inline parley_forum *open_memory(void) {
    parley_forum *forum = NULL;
    CHECK_RC(parley_forum_open(NULL, SETTINGS, &forum), PARLEY_OK);
    CHECK(forum != NULL);
    return forum;
}

static inline char *make_token(parley_forum *forum, const char *spec) {
    char *token = NULL;
    CHECK_RC(parley_token_create(forum, spec, &token), PARLEY_OK);
    CHECK(token != NULL);
    return token;
}

#endif
