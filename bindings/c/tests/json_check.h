/* JSON helpers of the C tests that read libparley's results with jansson. */
#ifndef PARLEY_TEST_JSON_CHECK_H
#define PARLEY_TEST_JSON_CHECK_H

#include <stdio.h>

#include <jansson.h>

#include "parley.h"

/* Parses a string returned by libparley and frees it. */
static json_t *take_json(char *text) {
    json_error_t error;
    json_t *value;
    if (text == NULL) {
        return NULL;
    }
    value = json_loads(text, JSON_DECODE_ANY, &error);
    if (value == NULL) {
        fprintf(stderr, "libparley returned text that is not JSON (%s): %s\n", error.text, text);
    }
    parley_string_free(text);
    return value;
}

/* The string at `key` of an object, or NULL. */
static const char *str_at(json_t *obj, const char *key) {
    return json_string_value(json_object_get(obj, key));
}

#endif
