// The header compiles as C++ (extern "C" linkage, no C-only constructs) and
// links against libparley from a C++ translation unit.
#include "parley.h"
#include "parley.h" // the include guard makes a second inclusion harmless

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

// The same fixed-width type in C and C++: no C++ enum, whose range would differ.
static_assert(std::is_same<parley_result, std::uint32_t>::value, "parley_result is a uint32_t");

int main() {
    parley_forum *forum = nullptr;
    char *out = nullptr;
    int failed = 0;
    if (parley_forum_open(nullptr, nullptr, &forum) != PARLEY_OK) {
        std::fprintf(stderr, "open: %s\n", parley_last_error());
        failed = 1;
    } else if (parley_call(forum, nullptr, "get_manifest", nullptr, &out) != PARLEY_OK ||
               std::strstr(out, "\"parley\":\"1\"") == nullptr) {
        std::fprintf(stderr, "get_manifest: %s\n", parley_last_error());
        failed = 1;
    }
    if (std::strcmp(parley_result_name(PARLEY_REFUSED), "PARLEY_REFUSED") != 0 ||
        std::strcmp(parley_result_name(UINT32_MAX), "PARLEY_UNKNOWN_RESULT") != 0) {
        failed = 1;
    }
    parley_string_free(out);
    parley_forum_free(forum);
    std::printf("%s - header_usable_from_cpp\nRESULT passed=%d failed=%d\n", failed ? "not ok" : "ok", 1 - failed,
                failed);
    return failed;
}
