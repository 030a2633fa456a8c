#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests of the PostgreSQL backend.
#
#   source tests/pg/server.sh && pg_start    # sets PARLEY_TEST_PG
#   pg_down; pg_up                           # an outage, and the server back
#   pg_crash; pg_up                          # a crash, and recovery from the WAL
#   pg_stop                                  # stops it and removes its files
#
# It installs Debian's `postgresql` when the server binaries are missing, runs as
# an unprivileged user (`postgres` when started by root), keeps its data in a new
# temporary directory, and listens on a Unix socket in that directory only: no TCP
# port, nothing outside the directory touched.

pg_bin() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        [ -x "$dir/pg_ctl" ] && { echo "$dir"; return 0; }
    done
    return 1
}

pg_install() {
    pg_bin >/dev/null && return 0
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        echo "installing PostgreSQL from Debian's packages" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null ||
            { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
              DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }
    fi
    pg_bin >/dev/null || { echo "PostgreSQL's server is missing (apt-get install postgresql)" >&2; return 1; }
}

# Runs a command as the server's user.
pg_as() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_start() {
    pg_install || return 1
    local bin
    bin="$(pg_bin)"
    PG_DIR="$(mktemp -d /tmp/parley-pg.XXXXXX)"
    [ "$(id -u)" -eq 0 ] && chown postgres "$PG_DIR"
    pg_as "$bin/initdb" -D "$PG_DIR/data" -U parley --auth=trust -E UTF8 --locale=C.UTF-8 >"$PG_DIR/initdb.log" 2>&1 ||
        { cat "$PG_DIR/initdb.log" >&2; return 1; }
    export PG_DIR
    pg_up || return 1
    export PARLEY_TEST_PG="postgres://parley@localhost/postgres?host=$PG_DIR"
    # Tests that need the server fail, rather than skip, when it is not there.
    export PARLEY_TEST_PG_REQUIRED=1
    echo "PostgreSQL at $PG_DIR" >&2
}

# Starts the server of $PG_DIR (again, after `pg_down`), on its socket only.
pg_up() {
    pg_as "$(pg_bin)/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
        -o "-c listen_addresses='' -k $PG_DIR -c max_connections=300" start >/dev/null ||
        { cat "$PG_DIR/server.log" >&2; return 1; }
}

# Stops the server of $PG_DIR at once, cutting its connections mid-transaction
# (for the tests of an outage); its files stay for `pg_up`.
pg_down() {
    pg_as "$(pg_bin)/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null
}

# Kills the server of $PG_DIR as a crash would: no shutdown checkpoint, so the
# next `pg_up` recovers from the WAL.
pg_crash() {
    pg_as "$(pg_bin)/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null
}

pg_stop() {
    [ -n "${PG_DIR:-}" ] || return 0
    pg_as "$(pg_bin)/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
    unset PG_DIR PARLEY_TEST_PG
}
